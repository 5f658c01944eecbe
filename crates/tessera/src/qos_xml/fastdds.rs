//! Fast DDS 2.x `<profiles>` documents, translated into DDS-XML entity elements so that one
//! code path reads the values. Fast DDS names its policies in camel case
//! (`ownershipStrength`), writes enumerators short (`RELIABLE`, which the value parser
//! takes), partitions as `<names><name>` and octets as dotted hexadecimal (`56.30.61`);
//! history and resource limits of a writer or reader sit in its `<topic>` element.
//! Everything transport- or implementation-specific (locators, `<times>`, `<publishMode>`,
//! `<data_sharing>`, memory policies, `<rtps>` settings) is a warning.
use super::dom::Node;
use super::error::{QosXmlError, XmlWarning};
use super::profiles::{EntityElement, Kind, Profile};
use super::values::{bool_attr, warn};

/// The library Fast DDS profiles are loaded into (Fast DDS profiles have no library).
pub(crate) const LIBRARY: &str = "fastdds";

/// Fast DDS policy element → DDS-XML element, and which side of a writer/reader profile it
/// belongs to (`true`: the publisher/subscriber).
const POLICIES: &[(&str, &str, bool)] = &[
    ("durability", "durability", false),
    ("durabilityService", "durability_service", false),
    ("deadline", "deadline", false),
    ("latencyBudget", "latency_budget", false),
    ("liveliness", "liveliness", false),
    ("reliability", "reliability", false),
    ("lifespan", "lifespan", false),
    ("userData", "user_data", false),
    ("timeBasedFilter", "time_based_filter", false),
    ("ownership", "ownership", false),
    ("ownershipStrength", "ownership_strength", false),
    ("destinationOrder", "destination_order", false),
    ("destination_order", "destination_order", false),
    ("topicData", "topic_data", false),
    ("presentation", "presentation", true),
    ("partition", "partition", true),
    ("groupData", "group_data", true),
];

/// A DDS-XML element named `name` with `children`, positioned at `at`.
fn element(name: &str, at: &Node, children: Vec<Node>) -> Node {
    Node {
        name: name.to_string(),
        attrs: Vec::new(),
        children,
        text: String::new(),
        at: at.at.clone(),
    }
}

/// `<partition><names><name>A</name></names>` → `<partition><name><element>A</element>`.
fn partition(node: &Node, w: &mut Vec<XmlWarning>) -> Node {
    let mut names = Vec::new();
    for c in &node.children {
        if c.name != "names" {
            warn(w, c, "not a field of <partition>; ignored");
            continue;
        }
        for n in &c.children {
            if n.name == "name" {
                names.push(Node {
                    name: "element".into(),
                    ..n.clone()
                });
            } else {
                warn(w, n, "not a partition <name>; ignored");
            }
        }
    }
    element("partition", node, vec![element("name", node, names)])
}

/// `<userData><value>56.30.61</value>...` (Fast DDS: hexadecimal octets separated by dots,
/// the `<value>`s concatenated) → `<user_data><value>86,48,97</value>` (named `std_name`).
fn octets(node: &Node, std_name: &str, w: &mut Vec<XmlWarning>) -> Result<Node, QosXmlError> {
    let mut bytes: Vec<String> = Vec::new();
    for v in &node.children {
        if v.name != "value" {
            warn(w, v, format!("not a field of <{}>; ignored", node.name));
            continue;
        }
        if v.text.is_empty() {
            continue;
        }
        for part in v.text.split('.') {
            let ok = (1..=2).contains(&part.len()) && part.bytes().all(|b| b.is_ascii_hexdigit());
            let b = u8::from_str_radix(part, 16)
                .ok()
                .filter(|_| ok)
                .ok_or_else(|| {
                    v.invalid("expected hexadecimal octets separated by dots (Fast DDS)")
                })?;
            bytes.push(b.to_string());
        }
    }
    let mut value = element("value", node, Vec::new());
    value.text = bytes.join(",");
    Ok(element(std_name, node, vec![value]))
}

/// Translates the policies of a Fast DDS `<qos>` element (and the history and resource
/// limits of a `<topic>` element) into the entity's and its group's DDS-XML children.
fn policies(
    qos: &Node,
    entity: &mut Vec<Node>,
    group: &mut Vec<Node>,
    w: &mut Vec<XmlWarning>,
) -> Result<(), QosXmlError> {
    for c in &qos.children {
        match POLICIES.iter().find(|(fast, _, _)| *fast == c.name) {
            Some((_, std_name, in_group)) => {
                let node = if c.name == "partition" {
                    partition(c, w)
                } else if std_name.ends_with("_data") {
                    octets(c, std_name, w)?
                } else {
                    Node {
                        name: std_name.to_string(),
                        ..c.clone()
                    }
                };
                if *in_group {
                    group.push(node);
                } else {
                    entity.push(node);
                }
            }
            None => warn(w, c, "Fast DDS-specific QoS; ignored"),
        }
    }
    Ok(())
}

fn topic_part(topic: &Node, entity: &mut Vec<Node>, w: &mut Vec<XmlWarning>) {
    for c in &topic.children {
        match c.name.as_str() {
            "historyQos" => entity.push(Node {
                name: "history".into(),
                ..c.clone()
            }),
            "resourceLimitsQos" => {
                let mut limits = c.clone();
                limits.name = "resource_limits".into();
                limits.children.retain(|f| {
                    let known = matches!(
                        f.name.as_str(),
                        "max_samples" | "max_instances" | "max_samples_per_instance"
                    );
                    if !known {
                        warn(w, f, "Fast DDS-specific resource limit; ignored");
                    }
                    known
                });
                entity.push(limits);
            }
            "name" | "dataType" | "kind" => {} // the topic's identity, not QoS
            _ => warn(w, c, "Fast DDS-specific topic setting; ignored"),
        }
    }
}

fn profile(node: &Node, parts: Vec<(Kind, Node)>) -> Result<Profile, QosXmlError> {
    let name = match node.attr("profile_name") {
        Some(n) if !n.trim().is_empty() => n.trim(),
        _ => return Err(node.invalid("the attribute `profile_name` is required")),
    };
    let is_default = bool_attr(node, "is_default_profile")?;
    Ok(Profile {
        name: format!("{LIBRARY}::{name}"),
        base: None,
        is_default,
        at: node.at.clone(),
        entities: parts
            .into_iter()
            .map(|(kind, node)| EntityElement {
                kind,
                topic_filter: None,
                base: None,
                node,
            })
            .collect(),
    })
}

/// The profiles of a Fast DDS `<profiles>` element.
pub(crate) fn read_profiles(
    root: &Node,
    w: &mut Vec<XmlWarning>,
) -> Result<Vec<Profile>, QosXmlError> {
    let mut out = Vec::new();
    for p in &root.children {
        let (endpoint, group_kind, endpoint_kind) = match p.name.as_str() {
            "data_writer" | "publisher" => (true, Kind::Publisher, Kind::Writer),
            "data_reader" | "subscriber" => (true, Kind::Subscriber, Kind::Reader),
            "participant" | "topic" => (false, Kind::Participant, Kind::Participant),
            _ => {
                warn(w, p, "not a QoS profile (Fast DDS-specific); ignored");
                continue;
            }
        };
        if endpoint {
            let (mut entity, mut group) = (Vec::new(), Vec::new());
            for c in &p.children {
                match c.name.as_str() {
                    "qos" => policies(c, &mut entity, &mut group, w)?,
                    "topic" => topic_part(c, &mut entity, w),
                    _ => warn(w, c, "Fast DDS-specific setting; ignored"),
                }
            }
            let parts = vec![
                (endpoint_kind, element(&p.name, p, entity)),
                (group_kind, element(&p.name, p, group)),
            ];
            out.push(profile(p, parts)?);
        } else if p.name == "topic" {
            let mut entity = Vec::new();
            topic_part(p, &mut entity, w);
            out.push(profile(
                p,
                vec![(Kind::Topic, element("topic", p, entity))],
            )?);
        } else {
            let mut entity = Vec::new();
            for c in &p.children {
                match c.name.as_str() {
                    "rtps" => {
                        for r in &c.children {
                            if r.name == "userData" {
                                entity.push(octets(r, "user_data", w)?);
                            } else {
                                warn(w, r, "Fast DDS-specific participant setting; ignored");
                            }
                        }
                    }
                    _ => warn(w, c, "Fast DDS-specific participant setting; ignored"),
                }
            }
            out.push(profile(
                p,
                vec![(Kind::Participant, element("participant", p, entity))],
            )?);
        }
    }
    Ok(out)
}
