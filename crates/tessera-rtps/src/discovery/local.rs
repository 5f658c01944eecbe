//! Matching a participant's own writers and readers with each other.
//!
//! Kept apart from the [`DiscoveryEngine`](super::DiscoveryEngine)s because it is the same
//! whatever the discovery protocol (SPDP/SEDP, a discovery server, a node service) and involves
//! no network: the runtime owns one beside its engine and applies both one's events the same
//! way. The [`DiscoveryDb`](super::DiscoveryDb) matches only local against remote.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{
    evaluate_match, DiscoveredReaderData, DiscoveredWriterData, EngineEvent, MatchOutcome,
    RemoteEndpointInfo,
};
use crate::types::Guid;

/// The local endpoints of one participant and the decisions between them.
///
/// Each pair is evaluated once, when its second endpoint is added: local endpoints do not
/// change QoS after creation. Deterministic (ordered by GUID).
#[derive(Debug, Default)]
pub struct LocalMatcher {
    writers: BTreeMap<Guid, Arc<DiscoveredWriterData>>,
    readers: BTreeMap<Guid, Arc<DiscoveredReaderData>>,
}

impl LocalMatcher {
    /// No endpoints.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a local writer and appends its matches (or incompatibilities) with the local readers
    /// to `out`: for each match, one event for the writer and one for the reader.
    /// A writer already known (same GUID) is replaced: it is a re-announcement with new QoS,
    /// and pairs that no longer match are unmatched first.
    pub fn add_writer(&mut self, w: DiscoveredWriterData, out: &mut Vec<EngineEvent>) {
        let w = Arc::new(w);
        let old = self.writers.remove(&w.guid);
        for r in self.readers.values() {
            if let Some(o) = &old {
                unmatch_if_ended(o, r, &w, r, out);
            }
            pair_events(&w, r, out);
        }
        self.writers.insert(w.guid, w);
    }

    /// Adds a local reader and appends its matches (or incompatibilities) with the local writers
    /// to `out`. A reader already known is replaced, as [`LocalMatcher::add_writer`] does.
    pub fn add_reader(&mut self, r: DiscoveredReaderData, out: &mut Vec<EngineEvent>) {
        let r = Arc::new(r);
        let old = self.readers.remove(&r.guid);
        for w in self.writers.values() {
            if let Some(o) = &old {
                unmatch_if_ended(w, o, w, &r, out);
            }
            pair_events(w, &r, out);
        }
        self.readers.insert(r.guid, r);
    }

    /// Removes a local writer or reader and appends the unmatches of its former partners to
    /// `out` (the removed endpoint itself is gone and gets none).
    pub fn remove(&mut self, guid: Guid, out: &mut Vec<EngineEvent>) {
        if let Some(w) = self.writers.remove(&guid) {
            for r in self.readers.values() {
                if evaluate_match(&w, r) == MatchOutcome::Match {
                    out.push(EngineEvent::Unmatched {
                        local: r.guid,
                        remote: guid,
                        lost: false,
                    });
                }
            }
        } else if let Some(r) = self.readers.remove(&guid) {
            for w in self.writers.values() {
                if evaluate_match(w, &r) == MatchOutcome::Match {
                    out.push(EngineEvent::Unmatched {
                        local: w.guid,
                        remote: guid,
                        lost: false,
                    });
                }
            }
        }
    }

    /// A local writer.
    pub fn writer(&self, guid: Guid) -> Option<&Arc<DiscoveredWriterData>> {
        self.writers.get(&guid)
    }

    /// A local reader.
    pub fn reader(&self, guid: Guid) -> Option<&Arc<DiscoveredReaderData>> {
        self.readers.get(&guid)
    }
}

/// Unmatches a pair that matched as (`old_w`, `old_r`) and no longer does as (`w`, `r`).
fn unmatch_if_ended(
    old_w: &DiscoveredWriterData,
    old_r: &DiscoveredReaderData,
    w: &DiscoveredWriterData,
    r: &DiscoveredReaderData,
    out: &mut Vec<EngineEvent>,
) {
    if evaluate_match(old_w, old_r) == MatchOutcome::Match
        && evaluate_match(w, r) != MatchOutcome::Match
    {
        for (local, remote) in [(w.guid, r.guid), (r.guid, w.guid)] {
            out.push(EngineEvent::Unmatched {
                local,
                remote,
                lost: false,
            });
        }
    }
}

fn pair_events(
    w: &Arc<DiscoveredWriterData>,
    r: &Arc<DiscoveredReaderData>,
    out: &mut Vec<EngineEvent>,
) {
    match evaluate_match(w, r) {
        MatchOutcome::Match => {
            out.push(EngineEvent::Matched {
                local: w.guid,
                remote: RemoteEndpointInfo::Reader(r.clone()),
            });
            out.push(EngineEvent::Matched {
                local: r.guid,
                remote: RemoteEndpointInfo::Writer(w.clone()),
            });
        }
        MatchOutcome::Incompatible(policies) => {
            out.push(EngineEvent::IncompatibleQos {
                local: w.guid,
                remote: r.guid,
                policies: policies.clone(),
            });
            out.push(EngineEvent::IncompatibleQos {
                local: r.guid,
                remote: w.guid,
                policies,
            });
        }
        MatchOutcome::OtherTopic | MatchOutcome::NoMatch(_) => {}
    }
}
