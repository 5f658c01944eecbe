//! What each client is told, kept up to date incrementally.
//!
//! Client `b` needs endpoint `g` (of another participant) when `b` has an endpoint of the other
//! kind on `g`'s topic whose partitions match `g`'s (a super client or a linked server needs
//! every endpoint). Partitions matter at scale: a ddsperf pong has one writer per peer, each in
//! that peer's own partition, so topic alone would tell each of N clients all N² writers, and
//! topic and partition tell it about N. Recomputing what every client needs on every change
//! costs (clients × their wanted endpoints) per change, which at 100 such clients made the
//! server spend minutes before anyone was matched. Instead, the server acts on each change:
//!
//! - an endpoint arrives (or its partitions change): the clients with an endpoint of the other
//!   kind on its topic (found in the [`TopicIndex`], by owner) are considered, and want it if
//!   partitions match; its owner wants every matching endpoint of the other kind there;
//! - wanting `g`: `g`'s participant's DATA(p) is written to `b` if `b` does not have it; then
//!   `g` is written at once if `b` acknowledged that DATA(p), or kept in `b`'s pending set;
//! - `b` acknowledges DATA(p)s: only its pending endpoints whose DATA(p) is now acknowledged
//!   are written.
//!
//! So each (client, endpoint) pair is considered a bounded number of times
//! (`DsServerCounters::relay_checks` counts them). A full recomputation
//! ([`DiscoveryServerEngine::sync_client`]) is left for rare events: a super client or linked
//! server appearing, a backup restored. An endpoint that stops matching is not withdrawn: the
//! client has its updated announcement (or its own endpoint's new partitions) and unmatches.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Instant;

use super::{is_server, DiscoveryServerEngine, ParticipantType};
use crate::qos::{is_wildcard, partitions_match};
use crate::types::{Guid, GuidPrefix};

/// Endpoints by owner.
type ByOwner = BTreeMap<GuidPrefix, BTreeSet<Guid>>;

/// The endpoints on one topic, per kind (readers, writers): all of them by owner, and again by
/// partition name (exact names; `""` is the default partition) or, for those with a pattern
/// among their partitions, apart — so that an arriving endpoint finds the owners it can match
/// without looking at every endpoint on the topic.
#[derive(Default)]
pub(super) struct TopicIndex {
    by_kind: [ByOwner; 2],
    by_name: [HashMap<String, ByOwner>; 2],
    patterns: [ByOwner; 2],
}

fn kind(g: &Guid) -> usize {
    usize::from(g.entity_id.is_writer())
}

/// A partition list's names, the default partition for an empty list.
fn names(partitions: &[String]) -> impl Iterator<Item = &str> {
    partitions
        .iter()
        .map(String::as_str)
        .chain(partitions.is_empty().then_some(""))
}

fn has_pattern(partitions: &[String]) -> bool {
    partitions.iter().any(|n| is_wildcard(n))
}

fn insert(map: &mut ByOwner, g: Guid) {
    map.entry(g.prefix).or_default().insert(g);
}

fn remove(map: &mut ByOwner, g: Guid) {
    if let Some(set) = map.get_mut(&g.prefix) {
        set.remove(&g);
        if set.is_empty() {
            map.remove(&g.prefix);
        }
    }
}

impl TopicIndex {
    fn is_empty(&self) -> bool {
        self.by_kind.iter().all(BTreeMap::is_empty)
    }

    /// The endpoints of kind `k` here that may match partitions `p`: a superset of those that
    /// do (patterns are only narrowed down by the caller's exact check), by owner.
    fn candidates<'a>(&'a self, k: usize, p: &'a [String]) -> Vec<&'a ByOwner> {
        if has_pattern(p) {
            return vec![&self.by_kind[k]];
        }
        let mut out: Vec<&ByOwner> = names(p).filter_map(|n| self.by_name[k].get(n)).collect();
        out.push(&self.patterns[k]);
        out
    }
}

impl DiscoveryServerEngine {
    /// Records `g` on `topic` with its partitions.
    pub(super) fn index_add(&mut self, g: Guid, topic: &str, partitions: &[String]) {
        let t = self.topics.entry(topic.to_string()).or_default();
        let k = kind(&g);
        insert(&mut t.by_kind[k], g);
        if has_pattern(partitions) {
            insert(&mut t.patterns[k], g);
        } else {
            for n in names(partitions) {
                insert(t.by_name[k].entry(n.to_string()).or_default(), g);
            }
        }
    }

    /// Forgets `g` on `topic` (indexed with `partitions`).
    pub(super) fn index_remove(&mut self, g: Guid, topic: &str, partitions: &[String]) {
        let Some(t) = self.topics.get_mut(topic) else {
            return;
        };
        let k = kind(&g);
        remove(&mut t.by_kind[k], g);
        remove(&mut t.patterns[k], g);
        for n in names(partitions) {
            if let Some(m) = t.by_name[k].get_mut(n) {
                remove(m, g);
                if m.is_empty() {
                    t.by_name[k].remove(n);
                }
            }
        }
        if t.is_empty() {
            self.topics.remove(topic);
        }
    }

    /// The partitions endpoint `x` was announced with.
    fn partitions_of(&self, x: &Guid) -> Option<&[String]> {
        self.clients
            .get(&x.prefix)
            .and_then(|c| c.endpoints.get(x))
            .map(|e| e.partitions.as_slice())
    }

    /// Whether endpoints `g` and `h` (of different kinds, on one topic) share a partition.
    fn partitions_meet(&self, g: &Guid, h: &Guid) -> bool {
        match (self.partitions_of(g), self.partitions_of(h)) {
            (Some(a), Some(b)) => partitions_match(a, b),
            _ => false,
        }
    }

    /// The endpoints of other owners on `topic` that endpoint `g` matches by partition, by
    /// owner.
    fn matching(&self, g: &Guid, topic: &str) -> BTreeMap<GuidPrefix, Vec<Guid>> {
        let mut out: BTreeMap<GuidPrefix, Vec<Guid>> = BTreeMap::new();
        let (Some(t), Some(p)) = (self.topics.get(topic), self.partitions_of(g)) else {
            return out;
        };
        for owners in t.candidates(1 - kind(g), p) {
            for (o, set) in owners {
                if *o == g.prefix {
                    continue;
                }
                for h in set {
                    if self.partitions_meet(g, h) {
                        out.entry(*o).or_default().push(*h);
                    }
                }
            }
        }
        out
    }

    /// Whether client `b` (one we write to) should be told of endpoint `g` now.
    fn wants(&self, b: GuidPrefix, g: Guid) -> bool {
        let Some(c) = self.clients.get(&b) else {
            return false;
        };
        if c.via.is_some() || g.prefix == b {
            return false;
        }
        let Some(owner) = self.clients.get(&g.prefix) else {
            return false;
        };
        let Some(e) = owner.endpoints.get(&g) else {
            return false;
        };
        if c.kind == ParticipantType::SuperClient || is_server(c.kind) {
            // A linked server is not told back what it told us.
            return owner.via != Some(b);
        }
        let Some(t) = self.topics.get(&e.topic) else {
            return false;
        };
        t.candidates(1 - kind(&g), &e.partitions)
            .into_iter()
            .filter_map(|owners| owners.get(&b))
            .any(|mine| mine.iter().any(|h| self.partitions_meet(&g, h)))
    }

    /// Client `b` should know endpoint `g`: its participant first, then (once `b` acknowledged
    /// that) the endpoint.
    pub(super) fn want(&mut self, b: GuidPrefix, g: Guid, now: Instant) {
        self.counters.relay_checks += 1;
        if !self.wants(b, g) || self.clients.get(&b).is_some_and(|c| c.told.contains(&g)) {
            return;
        }
        let a = g.prefix;
        if !self
            .clients
            .get(&b)
            .is_some_and(|c| c.known.contains_key(&a))
        {
            self.write_participant(b, a, now);
        }
        let Some(c) = self.clients.get_mut(&b) else {
            return;
        };
        let acked = c.known.get(&a).is_some_and(|sn| c.pdp.is_acked_by_all(*sn));
        if acked {
            self.write_endpoint(b, g, now);
        } else {
            c.pending.entry(a).or_default().insert(g);
        }
    }

    /// Writes endpoint `g`'s current announcement into client `b`'s SEDP writer.
    fn write_endpoint(&mut self, b: GuidPrefix, g: Guid, now: Instant) {
        let ts = Some(self.wall(now));
        let Some((payload, origin)) = self
            .clients
            .get(&g.prefix)
            .and_then(|o| o.endpoints.get(&g))
            .map(|e| (e.payload.clone(), e.origin))
        else {
            return;
        };
        let Some(c) = self.clients.get_mut(&b) else {
            return;
        };
        let core = if g.entity_id.is_writer() {
            &mut c.sedp_pub
        } else {
            &mut c.sedp_sub
        };
        if core
            .write_relayed(payload, Some(g.to_bytes()), 0, false, ts, Some(origin), now)
            .is_ok()
        {
            c.told.insert(g);
            c.hold.announced(now, self.relay_coalesce);
        }
    }

    /// Endpoint `g` on `topic` is new there, or its partitions changed: tell the clients it
    /// matches, and its owner what it now matches.
    pub(super) fn endpoint_arrived(&mut self, g: Guid, topic: &str, now: Instant) {
        let a = g.prefix;
        let matching = self.matching(&g, topic);
        let told = self.clients.get(&a).map(|c| &c.told);
        let for_owner: Vec<Guid> = matching
            .values()
            .flatten()
            .filter(|h| !told.is_some_and(|t| t.contains(h)))
            .copied()
            .collect();
        let mut concerned: Vec<GuidPrefix> = matching.into_keys().collect();
        // Super clients and linked servers want everything.
        concerned.extend(self.clients.iter().filter_map(|(p, c)| {
            let all = c.kind == ParticipantType::SuperClient || is_server(c.kind);
            (all && c.via.is_none() && *p != a).then_some(*p)
        }));
        for b in concerned {
            self.want(b, g, now);
        }
        for h in for_owner {
            self.want(a, h, now);
        }
    }

    /// Client `b` acknowledged more of its PDP stream: its pending endpoints whose
    /// participant it now knows go out.
    pub(super) fn release_pending(&mut self, b: GuidPrefix, now: Instant) {
        let Some(c) = self.clients.get_mut(&b) else {
            return;
        };
        let ready: Vec<GuidPrefix> = c
            .pending
            .keys()
            .filter(|a| c.known.get(a).is_some_and(|sn| c.pdp.is_acked_by_all(*sn)))
            .copied()
            .collect();
        let mut release = Vec::new();
        for a in ready {
            if let Some(set) = c.pending.remove(&a) {
                release.extend(set);
            }
        }
        for g in release {
            self.counters.relay_checks += 1;
            if self.wants(b, g) && self.clients.get(&b).is_some_and(|c| !c.told.contains(&g)) {
                self.write_endpoint(b, g, now);
            }
        }
    }

    /// The endpoints `b` should know of (see [`Self::wants`]), computed from scratch.
    fn wanted_by(&self, b: GuidPrefix) -> BTreeSet<Guid> {
        let Some(c) = self.clients.get(&b) else {
            return BTreeSet::new();
        };
        if c.kind == ParticipantType::SuperClient || is_server(c.kind) {
            return self
                .clients
                .iter()
                .filter(|(p, o)| **p != b && o.via != Some(b))
                .flat_map(|(_, o)| o.endpoints.keys().copied())
                .collect();
        }
        let mut out = BTreeSet::new();
        for (g, e) in &c.endpoints {
            out.extend(self.matching(g, &e.topic).into_values().flatten());
        }
        out
    }

    /// Brings client `b` up to date from scratch (rare events only: a super client or linked
    /// server appearing, a restored backup).
    pub(super) fn sync_client(&mut self, b: GuidPrefix, now: Instant) {
        if self.clients.get(&b).is_none_or(|c| c.via.is_some()) {
            return; // Not ours to write to: its own server serves it.
        }
        for g in self.wanted_by(b) {
            self.want(b, g, now);
        }
    }

    /// [`Self::sync_client`] for every client.
    pub(super) fn sync_all(&mut self, now: Instant) {
        let all: Vec<GuidPrefix> = self.clients.keys().copied().collect();
        for b in all {
            self.sync_client(b, now);
        }
    }
}
