//! The policy elements of DDS-XML and the entity QoS they fill.
//!
//! Each entity QoS type says which policy element names it holds ([`EntityQos::field`]);
//! [`apply_entity`] walks an entity element (`<datawriter_qos>`...) and changes only the
//! policies, and within a policy only the fields, that the element names: so a profile that
//! says `<reliability><max_blocking_time>` keeps the kind it inherited.

use super::dom::Node;
use super::error::{QosXmlError, XmlWarning};
use super::values::{boolean, count, duration, enumerator, int32, length, octets, warn};
use tessera_rtps::qos::{
    data_representation as repr, Consistency, DataReaderQos, DataRepresentation, DataWriterQos,
    Deadline, DestinationOrder, DomainParticipantQos, Durability, DurabilityService, EntityFactory,
    History, LatencyBudget, Lifespan, Liveliness, LivelinessKind, Ownership, OwnershipStrength,
    Partition, Presentation, PresentationAccessScope, PublisherQos, ReaderDataLifecycle,
    Reliability, ReliabilityKind, ResourceLimits, SubscriberQos, TimeBasedFilter, TopicQos,
    TransportPriority, TypeConsistencyEnforcement, TypeConsistencyKind, WriterDataLifecycle,
};

/// One policy of an entity QoS, borrowed for filling in.
pub(crate) enum Field<'a> {
    Durability(&'a mut Durability),
    DurabilityService(&'a mut DurabilityService),
    Deadline(&'a mut Deadline),
    LatencyBudget(&'a mut LatencyBudget),
    Liveliness(&'a mut Liveliness),
    Reliability(&'a mut Reliability),
    DestinationOrder(&'a mut DestinationOrder),
    History(&'a mut History),
    ResourceLimits(&'a mut ResourceLimits),
    Lifespan(&'a mut Lifespan),
    Ownership(&'a mut Ownership),
    OwnershipStrength(&'a mut OwnershipStrength),
    TimeBasedFilter(&'a mut TimeBasedFilter),
    Partition(&'a mut Partition),
    Presentation(&'a mut Presentation),
    /// USER_DATA, TOPIC_DATA, GROUP_DATA.
    Octets(&'a mut Vec<u8>),
    TransportPriority(&'a mut TransportPriority),
    WriterDataLifecycle(&'a mut WriterDataLifecycle),
    ReaderDataLifecycle(&'a mut ReaderDataLifecycle),
    EntityFactory(&'a mut EntityFactory),
    Consistency(&'a mut Consistency),
    DataRepresentation(&'a mut DataRepresentation),
    TypeConsistency(&'a mut TypeConsistencyEnforcement),
}

/// Every policy element the loader knows (DDS-XML spelling; `representation` is the
/// DDS-XTypes name of DATA_REPRESENTATION, `data_representation` Cyclone's; `consistency` is
/// Tessera's extension).
pub(crate) const POLICIES: &[&str] = &[
    "durability",
    "durability_service",
    "deadline",
    "latency_budget",
    "liveliness",
    "reliability",
    "destination_order",
    "history",
    "resource_limits",
    "lifespan",
    "ownership",
    "ownership_strength",
    "time_based_filter",
    "partition",
    "presentation",
    "user_data",
    "topic_data",
    "group_data",
    "transport_priority",
    "writer_data_lifecycle",
    "reader_data_lifecycle",
    "entity_factory",
    "consistency",
    "representation",
    "data_representation",
    "type_consistency",
];

/// An entity QoS that policy elements can fill.
pub(crate) trait EntityQos: Default + Clone {
    /// The policy of this entity that the element `policy` names, if the entity has it.
    fn field(&mut self, policy: &str) -> Option<Field<'_>>;
}

macro_rules! entity_qos {
    ($ty:ty { $($name:literal => $variant:ident($($field:tt).+)),* $(,)? }) => {
        impl EntityQos for $ty {
            fn field(&mut self, policy: &str) -> Option<Field<'_>> {
                Some(match policy {
                    $($name => Field::$variant(&mut self.$($field).+),)*
                    _ => return None,
                })
            }
        }
    };
}

entity_qos!(DataWriterQos {
    "durability" => Durability(durability),
    "durability_service" => DurabilityService(durability_service),
    "deadline" => Deadline(deadline),
    "latency_budget" => LatencyBudget(latency_budget),
    "liveliness" => Liveliness(liveliness),
    "reliability" => Reliability(reliability),
    "destination_order" => DestinationOrder(destination_order),
    "history" => History(history),
    "resource_limits" => ResourceLimits(resource_limits),
    "transport_priority" => TransportPriority(transport_priority),
    "lifespan" => Lifespan(lifespan),
    "user_data" => Octets(user_data.0),
    "ownership" => Ownership(ownership),
    "ownership_strength" => OwnershipStrength(ownership_strength),
    "writer_data_lifecycle" => WriterDataLifecycle(writer_data_lifecycle),
    "representation" => DataRepresentation(data_representation),
    "data_representation" => DataRepresentation(data_representation),
    "consistency" => Consistency(consistency),
});

entity_qos!(DataReaderQos {
    "durability" => Durability(durability),
    "deadline" => Deadline(deadline),
    "latency_budget" => LatencyBudget(latency_budget),
    "liveliness" => Liveliness(liveliness),
    "reliability" => Reliability(reliability),
    "destination_order" => DestinationOrder(destination_order),
    "history" => History(history),
    "resource_limits" => ResourceLimits(resource_limits),
    "user_data" => Octets(user_data.0),
    "ownership" => Ownership(ownership),
    "time_based_filter" => TimeBasedFilter(time_based_filter),
    "reader_data_lifecycle" => ReaderDataLifecycle(reader_data_lifecycle),
    "representation" => DataRepresentation(data_representation),
    "data_representation" => DataRepresentation(data_representation),
    "type_consistency" => TypeConsistency(type_consistency),
    "consistency" => Consistency(consistency),
});

entity_qos!(TopicQos {
    "topic_data" => Octets(topic_data.0),
    "durability" => Durability(durability),
    "durability_service" => DurabilityService(durability_service),
    "deadline" => Deadline(deadline),
    "latency_budget" => LatencyBudget(latency_budget),
    "liveliness" => Liveliness(liveliness),
    "reliability" => Reliability(reliability),
    "destination_order" => DestinationOrder(destination_order),
    "history" => History(history),
    "resource_limits" => ResourceLimits(resource_limits),
    "transport_priority" => TransportPriority(transport_priority),
    "lifespan" => Lifespan(lifespan),
    "ownership" => Ownership(ownership),
    "representation" => DataRepresentation(data_representation),
    "data_representation" => DataRepresentation(data_representation),
    "consistency" => Consistency(consistency),
});

entity_qos!(PublisherQos {
    "presentation" => Presentation(presentation),
    "partition" => Partition(partition),
    "group_data" => Octets(group_data.0),
    "entity_factory" => EntityFactory(entity_factory),
});

entity_qos!(SubscriberQos {
    "presentation" => Presentation(presentation),
    "partition" => Partition(partition),
    "group_data" => Octets(group_data.0),
    "entity_factory" => EntityFactory(entity_factory),
});

entity_qos!(DomainParticipantQos {
    "user_data" => Octets(user_data.0),
    "entity_factory" => EntityFactory(entity_factory),
});

/// Applies the policy elements inside `node` (an entity QoS element) to `q`. Elements this
/// loader does not know, and policies the entity does not have, are warnings.
pub(crate) fn apply_entity<Q: EntityQos>(
    node: &Node,
    q: &mut Q,
    w: &mut Vec<XmlWarning>,
) -> Result<(), QosXmlError> {
    for c in &node.children {
        match q.field(&c.name) {
            Some(f) => apply(c, f, w)?,
            None if POLICIES.contains(&c.name.as_str()) => warn(
                w,
                c,
                format!("this policy does not apply to <{}>; ignored", node.name),
            ),
            None => warn(w, c, "unknown element (vendor-specific?); ignored"),
        }
    }
    Ok(())
}

const DURABILITY: &[(&str, &str, Durability)] = &[
    ("VOLATILE_DURABILITY_QOS", "VOLATILE", Durability::Volatile),
    (
        "TRANSIENT_LOCAL_DURABILITY_QOS",
        "TRANSIENT_LOCAL",
        Durability::TransientLocal,
    ),
    (
        "TRANSIENT_DURABILITY_QOS",
        "TRANSIENT",
        Durability::Transient,
    ),
    (
        "PERSISTENT_DURABILITY_QOS",
        "PERSISTENT",
        Durability::Persistent,
    ),
];
const HISTORY: &[(&str, &str, bool)] = &[
    ("KEEP_LAST_HISTORY_QOS", "KEEP_LAST", false),
    ("KEEP_ALL_HISTORY_QOS", "KEEP_ALL", true),
];
const LIVELINESS: &[(&str, &str, LivelinessKind)] = &[
    (
        "AUTOMATIC_LIVELINESS_QOS",
        "AUTOMATIC",
        LivelinessKind::Automatic,
    ),
    (
        "MANUAL_BY_PARTICIPANT_LIVELINESS_QOS",
        "MANUAL_BY_PARTICIPANT",
        LivelinessKind::ManualByParticipant,
    ),
    (
        "MANUAL_BY_TOPIC_LIVELINESS_QOS",
        "MANUAL_BY_TOPIC",
        LivelinessKind::ManualByTopic,
    ),
];
const RELIABILITY: &[(&str, &str, ReliabilityKind)] = &[
    (
        "BEST_EFFORT_RELIABILITY_QOS",
        "BEST_EFFORT",
        ReliabilityKind::BestEffort,
    ),
    (
        "RELIABLE_RELIABILITY_QOS",
        "RELIABLE",
        ReliabilityKind::Reliable,
    ),
];
const DESTINATION_ORDER: &[(&str, &str, DestinationOrder)] = &[
    (
        "BY_RECEPTION_TIMESTAMP_DESTINATIONORDER_QOS",
        "BY_RECEPTION_TIMESTAMP",
        DestinationOrder::ByReceptionTimestamp,
    ),
    (
        "BY_SOURCE_TIMESTAMP_DESTINATIONORDER_QOS",
        "BY_SOURCE_TIMESTAMP",
        DestinationOrder::BySourceTimestamp,
    ),
];
const OWNERSHIP: &[(&str, &str, Ownership)] = &[
    ("SHARED_OWNERSHIP_QOS", "SHARED", Ownership::Shared),
    ("EXCLUSIVE_OWNERSHIP_QOS", "EXCLUSIVE", Ownership::Exclusive),
];
const ACCESS_SCOPE: &[(&str, &str, PresentationAccessScope)] = &[
    (
        "INSTANCE_PRESENTATION_QOS",
        "INSTANCE",
        PresentationAccessScope::Instance,
    ),
    (
        "TOPIC_PRESENTATION_QOS",
        "TOPIC",
        PresentationAccessScope::Topic,
    ),
    (
        "GROUP_PRESENTATION_QOS",
        "GROUP",
        PresentationAccessScope::Group,
    ),
];
const CONSISTENCY: &[(&str, &str, Consistency)] = &[
    (
        "EVENTUAL_CONSISTENCY_QOS",
        "EVENTUAL",
        Consistency::Eventual,
    ),
    ("ATOMIC_CONSISTENCY_QOS", "ATOMIC", Consistency::Atomic),
];
const TYPE_CONSISTENCY: &[(&str, &str, TypeConsistencyKind)] = &[
    (
        "DISALLOW_TYPE_COERCION",
        "DISALLOW",
        TypeConsistencyKind::DisallowTypeCoercion,
    ),
    (
        "ALLOW_TYPE_COERCION",
        "ALLOW",
        TypeConsistencyKind::AllowTypeCoercion,
    ),
];
const REPRESENTATION: &[(&str, &str, i16)] = &[
    ("XCDR_DATA_REPRESENTATION", "XCDR", repr::XCDR),
    ("XCDR1_DATA_REPRESENTATION", "XCDR1", repr::XCDR),
    ("XML_DATA_REPRESENTATION", "XML", repr::XML),
    ("XCDR2_DATA_REPRESENTATION", "XCDR2", repr::XCDR2),
];

/// Runs `f` on every child of the policy element `node`; a child `f` does not take (returns
/// `false`) is a warning. Text directly inside a policy is an error (policies have fields).
fn fields(
    node: &Node,
    w: &mut Vec<XmlWarning>,
    mut f: impl FnMut(&Node, &mut Vec<XmlWarning>) -> Result<bool, QosXmlError>,
) -> Result<(), QosXmlError> {
    if !node.text.is_empty() {
        return Err(node.invalid("expected child elements, found text"));
    }
    for c in &node.children {
        if !f(c, w)? {
            warn(w, c, format!("not a field of <{}>; ignored", node.name));
        }
    }
    Ok(())
}

/// `<element>` children as strings (a DDS-XML sequence); plain text counts as one element.
fn elements(node: &Node, w: &mut Vec<XmlWarning>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if !node.text.is_empty() {
        out.push(node.text.clone());
    }
    for c in &node.children {
        if c.name == "element" {
            out.push(c.text.clone());
        } else {
            warn(
                w,
                c,
                format!("not an <element> of <{}>; ignored", node.name),
            );
        }
    }
    out
}

/// Fills `field` from the policy element `node`.
fn apply(node: &Node, field: Field<'_>, w: &mut Vec<XmlWarning>) -> Result<(), QosXmlError> {
    match field {
        Field::Durability(d) => fields(node, w, |c, _| match c.name.as_str() {
            "kind" => enumerator(c, DURABILITY).map(|k| *d = k).map(|_| true),
            _ => Ok(false),
        }),
        Field::DurabilityService(d) => {
            let (mut kind, mut depth) = (None, None);
            fields(node, w, |c, w| {
                match c.name.as_str() {
                    "service_cleanup_delay" => d.service_cleanup_delay = duration(c, w)?,
                    "history_kind" => kind = Some(enumerator(c, HISTORY)?),
                    "history_depth" => depth = Some(count(c)?),
                    "max_samples" => d.resource_limits.max_samples = length(c)?,
                    "max_instances" => d.resource_limits.max_instances = length(c)?,
                    "max_samples_per_instance" => {
                        d.resource_limits.max_samples_per_instance = length(c)?
                    }
                    _ => return Ok(false),
                }
                Ok(true)
            })?;
            d.history = history(d.history, kind, depth);
            Ok(())
        }
        Field::Deadline(d) => fields(node, w, |c, w| match c.name.as_str() {
            "period" => duration(c, w).map(|p| d.period = p).map(|_| true),
            _ => Ok(false),
        }),
        Field::LatencyBudget(l) => fields(node, w, |c, w| match c.name.as_str() {
            "duration" => duration(c, w).map(|p| l.duration = p).map(|_| true),
            _ => Ok(false),
        }),
        Field::Liveliness(l) => fields(node, w, |c, w| {
            match c.name.as_str() {
                "kind" => l.kind = enumerator(c, LIVELINESS)?,
                "lease_duration" => l.lease_duration = duration(c, w)?,
                _ => return Ok(false),
            }
            Ok(true)
        }),
        Field::Reliability(r) => fields(node, w, |c, w| {
            match c.name.as_str() {
                "kind" => r.kind = enumerator(c, RELIABILITY)?,
                "max_blocking_time" => r.max_blocking_time = duration(c, w)?,
                _ => return Ok(false),
            }
            Ok(true)
        }),
        Field::DestinationOrder(d) => fields(node, w, |c, _| match c.name.as_str() {
            "kind" => enumerator(c, DESTINATION_ORDER)
                .map(|k| *d = k)
                .map(|_| true),
            _ => Ok(false),
        }),
        Field::History(h) => {
            let (mut kind, mut depth) = (None, None);
            fields(node, w, |c, _| {
                match c.name.as_str() {
                    "kind" => kind = Some(enumerator(c, HISTORY)?),
                    "depth" => depth = Some(count(c)?),
                    _ => return Ok(false),
                }
                Ok(true)
            })?;
            *h = history(*h, kind, depth);
            Ok(())
        }
        Field::ResourceLimits(r) => fields(node, w, |c, _| {
            match c.name.as_str() {
                "max_samples" => r.max_samples = length(c)?,
                "max_instances" => r.max_instances = length(c)?,
                "max_samples_per_instance" => r.max_samples_per_instance = length(c)?,
                _ => return Ok(false),
            }
            Ok(true)
        }),
        Field::Lifespan(l) => fields(node, w, |c, w| match c.name.as_str() {
            "duration" => duration(c, w).map(|p| l.duration = p).map(|_| true),
            _ => Ok(false),
        }),
        Field::Ownership(o) => fields(node, w, |c, _| match c.name.as_str() {
            "kind" => enumerator(c, OWNERSHIP).map(|k| *o = k).map(|_| true),
            _ => Ok(false),
        }),
        Field::OwnershipStrength(s) => fields(node, w, |c, _| match c.name.as_str() {
            "value" => int32(c).map(|v| s.0 = v).map(|_| true),
            _ => Ok(false),
        }),
        Field::TimeBasedFilter(t) => fields(node, w, |c, w| match c.name.as_str() {
            "minimum_separation" => duration(c, w)
                .map(|p| t.minimum_separation = p)
                .map(|_| true),
            _ => Ok(false),
        }),
        Field::Partition(p) => fields(node, w, |c, w| match c.name.as_str() {
            "name" => {
                p.0 = elements(c, w);
                Ok(true)
            }
            _ => Ok(false),
        }),
        Field::Presentation(p) => fields(node, w, |c, _| {
            match c.name.as_str() {
                "access_scope" => p.access_scope = enumerator(c, ACCESS_SCOPE)?,
                "coherent_access" => p.coherent_access = boolean(c)?,
                "ordered_access" => p.ordered_access = boolean(c)?,
                _ => return Ok(false),
            }
            Ok(true)
        }),
        Field::Octets(v) => fields(node, w, |c, _| match c.name.as_str() {
            "value" => octets(c).map(|o| *v = o).map(|_| true),
            _ => Ok(false),
        }),
        Field::TransportPriority(t) => fields(node, w, |c, _| match c.name.as_str() {
            "value" => int32(c).map(|v| t.0 = v).map(|_| true),
            _ => Ok(false),
        }),
        Field::WriterDataLifecycle(l) => fields(node, w, |c, _| match c.name.as_str() {
            "autodispose_unregistered_instances" => boolean(c)
                .map(|b| l.autodispose_unregistered_instances = b)
                .map(|_| true),
            _ => Ok(false),
        }),
        Field::ReaderDataLifecycle(l) => fields(node, w, |c, w| {
            match c.name.as_str() {
                "autopurge_nowriter_samples_delay" => {
                    l.autopurge_nowriter_samples_delay = duration(c, w)?
                }
                "autopurge_disposed_samples_delay" => {
                    l.autopurge_disposed_samples_delay = duration(c, w)?
                }
                _ => return Ok(false),
            }
            Ok(true)
        }),
        Field::EntityFactory(e) => fields(node, w, |c, _| match c.name.as_str() {
            "autoenable_created_entities" => boolean(c)
                .map(|b| e.autoenable_created_entities = b)
                .map(|_| true),
            _ => Ok(false),
        }),
        Field::Consistency(k) => fields(node, w, |c, _| match c.name.as_str() {
            "kind" => enumerator(c, CONSISTENCY).map(|v| *k = v).map(|_| true),
            _ => Ok(false),
        }),
        Field::DataRepresentation(r) => fields(node, w, |c, w| match c.name.as_str() {
            // RTI and DDS-XTypes: <value>; Cyclone DDS: <id>.
            "value" | "id" => {
                let mut ids = Vec::new();
                for e in c.children.iter().filter(|e| e.name == "element") {
                    ids.push(enumerator(e, REPRESENTATION)?);
                }
                let _ = elements(c, w); // warns about anything but <element>
                r.0 = ids;
                Ok(true)
            }
            _ => Ok(false),
        }),
        Field::TypeConsistency(t) => fields(node, w, |c, _| {
            match c.name.as_str() {
                "kind" => t.kind = enumerator(c, TYPE_CONSISTENCY)?,
                "ignore_sequence_bounds" => t.ignore_sequence_bounds = boolean(c)?,
                "ignore_string_bounds" => t.ignore_string_bounds = boolean(c)?,
                "ignore_member_names" => t.ignore_member_names = boolean(c)?,
                "prevent_type_widening" => t.prevent_type_widening = boolean(c)?,
                "force_type_validation" => t.force_type_validation = boolean(c)?,
                _ => return Ok(false),
            }
            Ok(true)
        }),
    }
}

/// HISTORY from what an element says over what was inherited: `kind` and `depth` may each be
/// absent. A depth without a kind changes a KEEP_LAST depth (and is meaningless, so ignored,
/// under KEEP_ALL); KEEP_LAST without a depth keeps the inherited depth (1 after KEEP_ALL).
fn history(old: History, keep_all: Option<bool>, depth: Option<u32>) -> History {
    let old_depth = match old {
        History::KeepLast(d) => Some(d),
        History::KeepAll => None,
    };
    match (keep_all, depth) {
        (Some(true), _) => History::KeepAll,
        (Some(false), d) => History::KeepLast(d.or(old_depth).unwrap_or(1)),
        (None, Some(d)) if old_depth.is_some() => History::KeepLast(d),
        (None, _) => old,
    }
}
