//! QoS libraries and profiles: reading them out of a DDS-XML tree, checking their
//! inheritance, and resolving one entity's QoS through `base_name` chains and topic filters.

use super::dom::Node;
use super::error::{Location, QosXmlError, XmlWarning};
use super::policies::{apply_entity, EntityQos};
use super::values::{bool_attr, warn};
use std::collections::HashMap;
use tessera_rtps::qos::{
    fnmatch, DataReaderQos, DataWriterQos, DomainParticipantQos, PublisherQos, SubscriberQos,
    TopicQos,
};

/// The entity a QoS element is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Participant,
    Topic,
    Publisher,
    Subscriber,
    Writer,
    Reader,
}

impl Kind {
    /// The kind an entity QoS element names: DDS-XML's spelling, RTI's `participant_qos` and
    /// Cyclone's `domainparticipant_qos`.
    pub fn from_element(name: &str) -> Option<Kind> {
        Some(match name {
            "domain_participant_qos" | "participant_qos" | "domainparticipant_qos" => {
                Kind::Participant
            }
            "topic_qos" => Kind::Topic,
            "publisher_qos" => Kind::Publisher,
            "subscriber_qos" => Kind::Subscriber,
            "datawriter_qos" => Kind::Writer,
            "datareader_qos" => Kind::Reader,
            _ => return None,
        })
    }
}

/// One entity QoS element of a profile.
#[derive(Debug, Clone)]
pub(crate) struct EntityElement {
    pub kind: Kind,
    /// `topic_filter`: the topics (fnmatch pattern) this element is for; `None` for all.
    pub topic_filter: Option<String>,
    /// The element's own `base_name` (qualified): it inherits that profile's QoS of its kind.
    pub base: Option<String>,
    pub node: Node,
}

/// A QoS profile.
#[derive(Debug, Clone)]
pub(crate) struct Profile {
    /// `library::profile`.
    pub name: String,
    /// `base_name`, qualified.
    pub base: Option<String>,
    pub is_default: bool,
    pub at: Location,
    pub entities: Vec<EntityElement>,
}

/// Qualifies a `base_name`: a name without `::` is in `library`.
fn qualify(library: &str, name: &str) -> String {
    if name.contains("::") {
        name.to_string()
    } else {
        format!("{library}::{name}")
    }
}

fn required<'a>(node: &'a Node, attr: &str) -> Result<&'a str, QosXmlError> {
    match node.attr(attr) {
        Some(v) if !v.trim().is_empty() => Ok(v.trim()),
        _ => Err(node.invalid(format!("the attribute `{attr}` is required"))),
    }
}

/// Warns about attributes other than `known` (namespace declarations and `xsi:` ones are
/// silent).
fn check_attributes(node: &Node, known: &[&str], w: &mut Vec<XmlWarning>) {
    for (k, _) in &node.attrs {
        let silent = k == "xmlns" || k.starts_with("xmlns:") || k.starts_with("xsi:");
        if !silent && !known.contains(&k.as_str()) {
            w.push(XmlWarning {
                at: node.at.clone(),
                element: format!("{}@{k}", node.name),
                message: "unknown attribute (vendor-specific?); ignored".into(),
            });
        }
    }
}

fn entity(library: &str, node: &Node, kind: Kind, w: &mut Vec<XmlWarning>) -> EntityElement {
    check_attributes(node, &["name", "base_name", "topic_filter"], w);
    EntityElement {
        kind,
        topic_filter: node.attr("topic_filter").map(|f| f.trim().to_string()),
        base: node
            .attr("base_name")
            .filter(|b| !b.trim().is_empty())
            .map(|b| qualify(library, b.trim())),
        node: node.clone(),
    }
}

/// The profiles of a `<dds>` root (DDS-XML, RTI, Cyclone).
pub(crate) fn read_dds(root: &Node, w: &mut Vec<XmlWarning>) -> Result<Vec<Profile>, QosXmlError> {
    check_attributes(root, &[], w);
    let mut out = Vec::new();
    for lib in &root.children {
        if lib.name == "profiles" {
            out.extend(super::fastdds::read_profiles(lib, w)?);
            continue;
        }
        if lib.name != "qos_library" {
            warn(w, lib, "not a QoS library; ignored by the QoS loader");
            continue;
        }
        check_attributes(lib, &["name"], w);
        let library = required(lib, "name")?;
        for p in &lib.children {
            if let Some(kind) = Kind::from_element(&p.name) {
                // A named entity QoS right in the library: a profile of one element.
                let name = required(p, "name")?;
                out.push(Profile {
                    name: format!("{library}::{name}"),
                    base: None,
                    is_default: false,
                    at: p.at.clone(),
                    entities: vec![entity(library, p, kind, w)],
                });
                continue;
            }
            if p.name != "qos_profile" {
                warn(w, p, "not a QoS profile; ignored");
                continue;
            }
            check_attributes(p, &["name", "base_name", "is_default_qos"], w);
            let name = required(p, "name")?;
            let is_default = bool_attr(p, "is_default_qos")?;
            let mut entities = Vec::new();
            for e in &p.children {
                match Kind::from_element(&e.name) {
                    Some(kind) => entities.push(entity(library, e, kind, w)),
                    None => warn(w, e, "not an entity QoS (vendor-specific?); ignored"),
                }
            }
            out.push(Profile {
                name: format!("{library}::{name}"),
                base: p
                    .attr("base_name")
                    .filter(|b| !b.trim().is_empty())
                    .map(|b| qualify(library, b.trim())),
                is_default,
                at: p.at.clone(),
                entities,
            });
        }
    }
    Ok(out)
}

/// All loaded profiles, by qualified name.
#[derive(Debug, Clone, Default)]
pub(crate) struct Profiles {
    list: Vec<Profile>,
    by_name: HashMap<String, usize>,
}

/// Inheritance is followed at most this deep (cycles are refused at load; this bounds the
/// recursion on a long acyclic chain).
const MAX_CHAIN: usize = 256;

impl Profiles {
    /// Adds profiles; a name defined twice is refused.
    pub fn add(&mut self, profiles: Vec<Profile>) -> Result<(), QosXmlError> {
        for p in profiles {
            if let Some(&i) = self.by_name.get(&p.name) {
                return Err(QosXmlError::DuplicateProfile {
                    at: p.at,
                    profile: p.name,
                    first: self.list[i].at.clone(),
                });
            }
            self.by_name.insert(p.name.clone(), self.list.len());
            self.list.push(p);
        }
        Ok(())
    }

    /// Checks that every `base_name` names a profile and that none inherits from itself,
    /// then applies every entity element once to its defaults, so that bad values are
    /// reported now (with their positions) and warnings are collected once.
    pub fn check(&self, w: &mut Vec<XmlWarning>) -> Result<(), QosXmlError> {
        for p in &self.list {
            let bases = p.base.iter().map(|b| (b, &p.at));
            let entity_bases = p
                .entities
                .iter()
                .filter_map(|e| e.base.as_ref().map(|b| (b, &e.node.at)));
            for (b, at) in bases.chain(entity_bases) {
                if !self.by_name.contains_key(b) {
                    return Err(QosXmlError::UnknownBase {
                        at: at.clone(),
                        base: b.clone(),
                    });
                }
            }
        }
        self.check_cycles()?;
        for p in &self.list {
            for e in &p.entities {
                match e.kind {
                    Kind::Participant => validate::<DomainParticipantQos>(e, w)?,
                    Kind::Topic => validate::<TopicQos>(e, w)?,
                    Kind::Publisher => validate::<PublisherQos>(e, w)?,
                    Kind::Subscriber => validate::<SubscriberQos>(e, w)?,
                    Kind::Writer => validate::<DataWriterQos>(e, w)?,
                    Kind::Reader => validate::<DataReaderQos>(e, w)?,
                }
            }
        }
        Ok(())
    }

    fn edges(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let p = &self.list[i];
        p.base
            .iter()
            .chain(p.entities.iter().filter_map(|e| e.base.as_ref()))
            .filter_map(|b| self.by_name.get(b).copied())
    }

    /// Depth-first search over profile → base edges (the profile's and its elements').
    fn check_cycles(&self) -> Result<(), QosXmlError> {
        // 0 unvisited, 1 on the current path, 2 done.
        let mut state = vec![0u8; self.list.len()];
        for start in 0..self.list.len() {
            if state[start] != 0 {
                continue;
            }
            let mut path = vec![start];
            let mut stack: Vec<Vec<usize>> = vec![self.edges(start).collect()];
            state[start] = 1;
            while let Some(next) = stack.last_mut() {
                match next.pop() {
                    Some(n) if state[n] == 1 => {
                        let from = path.iter().position(|&x| x == n).unwrap_or(0);
                        let mut names: Vec<&str> = path[from..]
                            .iter()
                            .map(|&i| self.list[i].name.as_str())
                            .collect();
                        names.push(&self.list[n].name);
                        return Err(QosXmlError::BaseCycle {
                            at: self.list[path[path.len() - 1]].at.clone(),
                            chain: names.join(" -> "),
                        });
                    }
                    Some(n) if state[n] == 0 => {
                        state[n] = 1;
                        path.push(n);
                        stack.push(self.edges(n).collect());
                    }
                    Some(_) => {}
                    None => {
                        stack.pop();
                        if let Some(done) = path.pop() {
                            state[done] = 2;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The index of a profile: `library::profile`, or a bare profile name that exactly one
    /// library defines.
    pub fn find(&self, name: &str) -> Result<usize, QosXmlError> {
        if let Some(&i) = self.by_name.get(name) {
            return Ok(i);
        }
        if !name.contains("::") {
            let suffix = format!("::{name}");
            let mut hits = self
                .list
                .iter()
                .enumerate()
                .filter(|(_, p)| p.name.ends_with(&suffix));
            if let (Some((i, _)), None) = (hits.next(), hits.next()) {
                return Ok(i);
            }
        }
        Err(QosXmlError::UnknownProfile(name.to_string()))
    }

    /// The qualified names of all profiles, in load order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.list.iter().map(|p| p.name.as_str())
    }

    /// The last profile marked `is_default_qos="true"`.
    pub fn default_profile(&self) -> Option<&str> {
        self.list
            .iter()
            .rev()
            .find(|p| p.is_default)
            .map(|p| p.name.as_str())
    }

    /// The QoS of `kind` that profile `i` gives an entity on `topic` (`None`: no topic, or
    /// the profile's element without a topic filter).
    pub fn resolve<Q: EntityQos>(&self, i: usize, kind: Kind, topic: Option<&str>) -> Q {
        self.resolve_at(i, kind, topic, 0)
    }

    fn resolve_at<Q: EntityQos>(
        &self,
        i: usize,
        kind: Kind,
        topic: Option<&str>,
        depth: usize,
    ) -> Q {
        let p = &self.list[i];
        // RTI's rule: the elements with a topic filter, in document order, before the one
        // without; a lookup without a topic sees only the latter (or a filter of `*`).
        let of_kind = || p.entities.iter().filter(|e| e.kind == kind);
        let elem = topic
            .and_then(|t| {
                of_kind().find(|e| {
                    e.topic_filter
                        .as_deref()
                        .is_some_and(|f| f.split(',').any(|f| fnmatch(f.trim(), t)))
                })
            })
            .or_else(|| {
                of_kind().find(|e| e.topic_filter.as_deref().is_none_or(|f| f.trim() == "*"))
            });
        let base = elem.and_then(|e| e.base.as_ref()).or(p.base.as_ref());
        let mut q = match base.and_then(|b| self.by_name.get(b)) {
            Some(&b) if depth < MAX_CHAIN => self.resolve_at(b, kind, topic, depth + 1),
            _ => Q::default(),
        };
        if let Some(e) = elem {
            // Values were checked at load: applying them again cannot fail.
            let _ = apply_entity(&e.node, &mut q, &mut Vec::new());
        }
        q
    }
}

fn validate<Q: EntityQos>(e: &EntityElement, w: &mut Vec<XmlWarning>) -> Result<(), QosXmlError> {
    apply_entity(&e.node, &mut Q::default(), w)
}
