//! What each client is told, kept up to date incrementally.
//!
//! Client `b` needs endpoint `g` (of another participant) when `b` has an endpoint of the other
//! kind on `g`'s topic (a super client or a linked server needs every endpoint). Recomputing
//! that for every client on every change costs (clients × their wanted endpoints) per change,
//! which at 100 ddsperf-like clients (one reader and 99 writers each, on one topic) made the
//! server spend minutes before anyone was matched. Instead, the server acts on each change:
//!
//! - an endpoint arrives: the clients with an endpoint of the other kind on its topic (found in
//!   the [`TopicIndex`], by owner) want it; if it is its owner's first of its kind on the
//!   topic, the owner wants every endpoint of the other kind there;
//! - wanting `g`: `g`'s participant's DATA(p) is written to `b` if `b` does not have it; then
//!   `g` is written at once if `b` acknowledged that DATA(p), or kept in `b`'s pending set;
//! - `b` acknowledges DATA(p)s: only its pending endpoints whose DATA(p) is now acknowledged
//!   are written.
//!
//! So each (client, endpoint) pair is considered a bounded number of times
//! (`DsServerCounters::relay_checks` counts them). A full recomputation
//! ([`DiscoveryServerEngine::sync_client`]) is left for rare events: a super client or linked
//! server appearing, a backup restored.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use super::{is_server, DiscoveryServerEngine, ParticipantType};
use crate::types::{Guid, GuidPrefix};

/// The endpoints on one topic: per kind (readers, writers), per owner.
#[derive(Default)]
pub(super) struct TopicIndex {
    by_kind: [BTreeMap<GuidPrefix, BTreeSet<Guid>>; 2],
}

fn kind(g: &Guid) -> usize {
    usize::from(g.entity_id.is_writer())
}

impl TopicIndex {
    fn is_empty(&self) -> bool {
        self.by_kind.iter().all(BTreeMap::is_empty)
    }
}

impl DiscoveryServerEngine {
    /// Records `g` on `topic`; true when it is its owner's first endpoint of its kind there.
    pub(super) fn index_add(&mut self, g: Guid, topic: &str) -> bool {
        let t = self.topics.entry(topic.to_string()).or_default();
        let set = t.by_kind[kind(&g)].entry(g.prefix).or_default();
        let first = set.is_empty();
        set.insert(g);
        first
    }

    /// Forgets `g` on `topic`.
    pub(super) fn index_remove(&mut self, g: Guid, topic: &str) {
        let Some(t) = self.topics.get_mut(topic) else {
            return;
        };
        let owners = &mut t.by_kind[kind(&g)];
        if let Some(set) = owners.get_mut(&g.prefix) {
            set.remove(&g);
            if set.is_empty() {
                owners.remove(&g.prefix);
            }
        }
        if t.is_empty() {
            self.topics.remove(topic);
        }
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
        self.topics
            .get(&e.topic)
            .is_some_and(|t| t.by_kind[1 - kind(&g)].contains_key(&b))
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

    /// Endpoint `g` on `topic` is new there (`first`: its owner's first of its kind there):
    /// tell the clients that need it, and its owner what it now needs.
    pub(super) fn endpoint_arrived(&mut self, g: Guid, topic: &str, first: bool, now: Instant) {
        let a = g.prefix;
        let other = 1 - kind(&g);
        let mut concerned: Vec<GuidPrefix> = Vec::new();
        let mut for_owner: Vec<Guid> = Vec::new();
        if let Some(t) = self.topics.get(topic) {
            concerned.extend(t.by_kind[other].keys().filter(|o| **o != a));
            if first {
                for (o, set) in &t.by_kind[other] {
                    if *o != a {
                        for_owner.extend(set.iter().copied());
                    }
                }
            }
        }
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
            if let Some(t) = self.topics.get(&e.topic) {
                for (o, set) in &t.by_kind[1 - kind(g)] {
                    if *o != b {
                        out.extend(set.iter().copied());
                    }
                }
            }
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
