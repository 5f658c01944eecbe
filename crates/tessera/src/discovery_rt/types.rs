//! Type information in discovery: registering our types, fetching peers' TypeObjects over
//! TypeLookup, and the assignability check of matches made on the type name.

use super::{unmatch, DiscoveryRuntime, MatchAction, TYPE_RESOLUTION_WAIT};
use crate::participant::ParticipantShared;
use std::sync::Arc;
use std::time::Instant;
use tessera_rtps::discovery::RemoteEndpointInfo;
use tessera_rtps::types::Guid;
use tessera_rtps::xtypes::{assignable, Assignability, TypeBundle};

impl DiscoveryRuntime {
    /// The TypeObjects of `ids` known now (ours, or peers' received and verified); those
    /// not known are asked of every peer (again after a second) and come later. `None` when
    /// type information is off.
    pub fn fetch_types(
        &mut self,
        p: &ParticipantShared,
        ids: &[tessera_rtps::xtypes::TypeIdentifier],
        now: Instant,
    ) -> Option<Vec<Option<tessera_rtps::xtypes::TypeObject>>> {
        let tl = self.type_lookup.as_mut()?;
        let found: Vec<_> = ids.iter().map(|id| tl.resolve(id)).collect();
        let missing: Vec<_> = ids
            .iter()
            .zip(&found)
            .filter(|(_, f)| f.is_none())
            .map(|(id, _)| id.clone())
            .collect();
        if !missing.is_empty() && tl.request(&missing, now) {
            self.flush(p, now);
        }
        Some(found)
    }

    /// Registers the XTypes description of type `name` (built by `bundle` the first time
    /// only): its endpoints announce the TypeInformation and the TypeLookup service serves
    /// its TypeObjects. Does nothing when type information is off.
    pub fn register_type(&mut self, name: &str, bundle: impl FnOnce() -> Option<TypeBundle>) {
        let Some(svc) = &mut self.type_lookup else {
            return;
        };
        if self.types.contains_key(name) {
            return;
        }
        if let Some(b) = bundle() {
            svc.register(&b);
            self.types.insert(name.to_owned(), Arc::new(b.information));
        }
    }

    /// Asks peers for the TypeObjects of `ids` not yet known (each at most once a second).
    /// Returns false when type information is off (no TypeLookup service).
    pub fn request_types(
        &mut self,
        p: &ParticipantShared,
        ids: &[tessera_rtps::xtypes::TypeIdentifier],
    ) -> bool {
        let now = Instant::now();
        let Some(t) = &mut self.type_lookup else {
            return false;
        };
        t.request(ids, now);
        self.flush(p, now);
        true
    }

    /// The TypeObject of a hashed identifier: ours, or a peer's received and verified.
    pub fn resolve_type(
        &self,
        id: &tessera_rtps::xtypes::TypeIdentifier,
    ) -> Option<tessera_rtps::xtypes::TypeObject> {
        self.type_lookup.as_ref().and_then(|t| t.resolve(id))
    }

    /// Why a peer's TypeObject of `id` arrived but was not kept (a kind Tessera does not
    /// model), if so.
    pub fn unsupported_type(
        &self,
        id: &tessera_rtps::xtypes::TypeIdentifier,
    ) -> Option<tessera_rtps::xtypes::XTypesError> {
        self.type_lookup.as_ref().and_then(|t| t.unsupported(id))
    }

    /// Whether local endpoint `local` and a matched remote one have assignable types: only
    /// asked when both announced type information with different minimal identifiers (equal
    /// ones, and DISALLOW_TYPE_COERCION, were decided by the engine's matching), and decided
    /// on the minimal TypeObjects (ours, and the peer's fetched over TypeLookup).
    pub(super) fn type_verdict(&self, local: Guid, remote: &RemoteEndpointInfo) -> Assignability {
        let (Some(svc), Some((ours, tce))) = (&self.type_lookup, self.local_types.get(&local))
        else {
            return Assignability::Assignable;
        };
        let theirs = match remote {
            RemoteEndpointInfo::Writer(w) => w.type_information.clone(),
            RemoteEndpointInfo::Reader(r) => r.type_information.clone(),
        };
        let Some(theirs) = theirs else {
            return Assignability::Assignable;
        };
        let ours_id = &ours.minimal.typeid_with_size.type_id;
        let theirs_id = &theirs.minimal.typeid_with_size.type_id;
        if ours_id == theirs_id {
            return Assignability::Assignable;
        }
        let resolve = |id: &tessera_rtps::xtypes::TypeIdentifier| svc.resolve(id);
        match remote {
            // A remote writer: our reader's policy; a remote reader: its policy.
            RemoteEndpointInfo::Writer(_) => assignable(ours_id, theirs_id, tce, &resolve),
            RemoteEndpointInfo::Reader(r) => {
                assignable(theirs_id, ours_id, &r.qos.type_consistency, &resolve)
            }
        }
    }

    /// Checks again the matches made on the type name (a peer's type arrived, or time
    /// passed): those whose types prove not assignable end; the others stay.
    pub(super) fn decide_pending(&mut self, now: Instant, out: &mut Vec<MatchAction>) {
        if self.pending.is_empty() {
            return;
        }
        let held: Vec<_> = self.pending.drain().collect();
        for (key, (remote, since)) in held {
            match self.type_verdict(key.0, &remote) {
                Assignability::Unresolved(missing) if now < since + TYPE_RESOLUTION_WAIT => {
                    if let Some(t) = &mut self.type_lookup {
                        t.request(&missing, now);
                    }
                    self.pending.insert(key, (remote, since));
                }
                Assignability::NotAssignable => {
                    tracing::debug!(local = ?key.0, remote = ?key.1, "types not assignable: match ended");
                    self.seen.record_match(key.0, key.1, false);
                    out.push(unmatch(key.0, key.1));
                    self.refused.insert(key);
                }
                Assignability::Unresolved(_) => {
                    tracing::debug!(local = ?key.0, remote = ?key.1, "peer type not resolved: the type name decided");
                }
                Assignability::Assignable => {}
            }
        }
    }
}
