//! Driving the engine: its timers and received built-in submessages, sending its datagrams,
//! and turning its events into participant events and [`MatchAction`]s.

use super::{
    unmatch, DiscoveryRuntime, MatchAction, ParticipantEvent, ParticipantInfo, TYPE_RESOLUTION_WAIT,
};
use crate::outbox;
use crate::participant::ParticipantShared;
use std::time::Instant;
use tessera_rtps::discovery::{EngineEvent, TypeLookupService};
use tessera_rtps::types::{EntityId, Guid};
use tessera_rtps::wire::ReceivedSubmessage;
use tessera_rtps::xtypes::Assignability;

impl DiscoveryRuntime {
    /// Tells peers we are leaving, so they unmatch at once rather than after the lease.
    pub fn announce_leaving(&mut self, p: &ParticipantShared) {
        let now = Instant::now();
        self.engine.shutdown(now);
        self.flush(p, now);
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        let held = self
            .pending
            .values()
            .map(|(_, since)| *since + TYPE_RESOLUTION_WAIT)
            .min();
        let tl = [
            self.type_lookup.as_ref().and_then(|t| t.poll_timeout()),
            held,
        ]
        .into_iter()
        .flatten()
        .min();
        match (self.engine.poll_timeout(), tl) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs the engine's timers (announcements, leases, SEDP heartbeats and repairs).
    pub fn on_timeout(&mut self, p: &ParticipantShared, now: Instant) -> Vec<MatchAction> {
        self.engine.handle_timeout(now);
        if let Some(t) = &mut self.type_lookup {
            t.handle_timeout(now);
        }
        let mut out = Vec::new();
        self.drain_engine(&mut out);
        self.decide_pending(now, &mut out);
        self.flush(p, now);
        out
    }

    /// A submessage from or to the built-in endpoint `entity` (its writer id).
    pub fn handle(
        &mut self,
        p: &ParticipantShared,
        entity: EntityId,
        rs: &ReceivedSubmessage<'_>,
        now: Instant,
    ) -> Vec<MatchAction> {
        if let Some(t) = &mut self.type_lookup {
            if TypeLookupService::owns(entity) {
                let before = t.counters();
                t.handle_submessage(rs, now);
                let after = t.counters();
                if after.rejected > before.rejected || after.bad_replies > before.bad_replies {
                    tracing::debug!(from = ?rs.source_prefix, "dropped an undecodable TypeLookup sample or a TypeObject that does not hash to its identifier");
                }
                let mut out = Vec::new();
                if t.take_resolved() {
                    self.decide_pending(now, &mut out);
                }
                self.flush(p, now);
                return out;
            }
        }
        if !self.engine.owns(entity) {
            return Vec::new();
        }
        let rejected = self.engine.rejected();
        self.engine.handle_submessage(rs, now);
        if self.engine.rejected() > rejected {
            tracing::debug!(from = ?rs.source_prefix, "dropped an undecodable or forged built-in sample");
        }
        self.flush(p, now);
        let mut out = Vec::new();
        self.drain_engine(&mut out);
        out
    }

    /// Sends every datagram the engine has ready.
    pub(super) fn flush(&mut self, p: &ParticipantShared, now: Instant) {
        let engine = &mut self.engine;
        outbox::drain(p, |t| engine.poll_transmit(now, t));
        if let Some(tl) = &mut self.type_lookup {
            outbox::drain(p, |t| tl.poll_transmit(now, t));
        }
    }

    pub(super) fn drain_engine(&mut self, out: &mut Vec<MatchAction>) {
        let mut events = Vec::new();
        while let Some(ev) = self.engine.poll_event() {
            events.push(ev);
        }
        self.apply(events, out);
    }

    /// Turns engine (or local matcher) events into endpoint actions and participant events.
    pub(super) fn apply(&mut self, events: Vec<EngineEvent>, out: &mut Vec<MatchAction>) {
        for ev in events {
            match ev {
                EngineEvent::ParticipantDiscovered(data) => {
                    tracing::debug!(peer = ?data.guid_prefix, "discovered participant");
                    if !self.seen.participant(&data, out) {
                        continue;
                    }
                    let info = ParticipantInfo {
                        guid: Guid::new(data.guid_prefix, EntityId::PARTICIPANT),
                        vendor: data.vendor_id,
                        user_data: data.user_data.clone(),
                    };
                    self.participants.insert(data.guid_prefix, info.clone());
                    self.watchers.send(&ParticipantEvent::Discovered(info));
                    if let Some(t) = &mut self.type_lookup {
                        let meta = if data.metatraffic_unicast_locators.is_empty() {
                            self.transport.select(&data.metatraffic_multicast_locators)
                        } else {
                            self.transport.select(&data.metatraffic_unicast_locators)
                        };
                        t.add_peer(
                            data.guid_prefix,
                            data.builtin_endpoints,
                            meta,
                            Instant::now(),
                        );
                    }
                }
                // Kept current for `participants()`, as before; watchers hear only of arrivals
                // and departures.
                EngineEvent::ParticipantUpdated(data) => {
                    if !self.seen.participant(&data, out) {
                        continue;
                    }
                    if let Some(info) = self.participants.get_mut(&data.guid_prefix) {
                        info.vendor = data.vendor_id;
                        info.user_data.clone_from(&data.user_data);
                    }
                }
                EngineEvent::ParticipantLost { prefix, reason } => {
                    tracing::debug!(peer = ?prefix, ?reason, "participant lost");
                    self.seen.participant_lost(prefix, out);
                    if let Some(t) = &mut self.type_lookup {
                        t.remove_peer(prefix);
                    }
                    if self.participants.remove(&prefix).is_some() {
                        let guid = Guid::new(prefix, EntityId::PARTICIPANT);
                        self.watchers.send(&ParticipantEvent::Lost(guid));
                    }
                }
                // A re-announced remote (SEDP update, or its participant's default locators
                // moved) goes the same way: `matched` of a remote the endpoint already has only
                // refreshes its locators and counts nothing.
                EngineEvent::Matched { local, remote }
                | EngineEvent::MatchUpdated { local, remote } => {
                    let key = (local, remote.guid());
                    if self.seen.refuses(&remote) {
                        continue;
                    }
                    match self.type_verdict(local, &remote) {
                        Assignability::Assignable => {
                            self.pending.remove(&key);
                            self.refused.remove(&key);
                        }
                        Assignability::NotAssignable => {
                            tracing::debug!(?local, remote = ?key.1, "types not assignable: no match");
                            if self.pending.remove(&key).is_some() {
                                self.seen.record_match(local, key.1, false);
                                out.push(unmatch(local, key.1));
                            }
                            self.refused.insert(key);
                            continue;
                        }
                        // Matched on the name at once, as before type information (peers do
                        // not all answer TypeLookup, and a held match would stall a writer
                        // that already sends to us); ended if the types prove not assignable.
                        Assignability::Unresolved(missing) => {
                            if let Some(t) = &mut self.type_lookup {
                                t.request(&missing, Instant::now());
                            }
                            let since = self.pending.get(&key).map_or_else(Instant::now, |p| p.1);
                            self.pending.insert(key, (remote.clone(), since));
                        }
                    }
                    let r = self.remote_endpoint(local, &remote);
                    self.seen.record_match(local, key.1, true);
                    out.push(if local.entity_id.is_writer() {
                        MatchAction::MatchWriter { local, remote: r }
                    } else {
                        MatchAction::MatchReader { local, remote: r }
                    });
                }
                EngineEvent::Unmatched {
                    local,
                    remote,
                    lost,
                } if self.refused.remove(&(local, remote)) => {
                    // Not matched on the endpoint's side (any more): nothing to undo.
                    let _ = lost;
                }
                EngineEvent::Unmatched {
                    local,
                    remote,
                    lost,
                } => {
                    self.pending.remove(&(local, remote));
                    self.seen.record_match(local, remote, false);
                    out.push(if local.entity_id.is_writer() {
                        MatchAction::UnmatchWriter { local, remote }
                    } else {
                        MatchAction::UnmatchReader {
                            local,
                            remote,
                            lost,
                        }
                    })
                }
                EngineEvent::RemoteEndpoint(info) => {
                    self.seen.endpoint(&info, out);
                }
                EngineEvent::RemoteEndpointLost(guid) => self.seen.endpoint_lost(guid, out),
                EngineEvent::LivelinessAsserted { prefix, manual } => {
                    tracing::trace!(peer = ?prefix, manual, "participant asserted liveliness");
                    out.push(MatchAction::LivelinessAsserted { prefix, manual });
                }
                EngineEvent::IncompatibleQos {
                    local, policies, ..
                } => {
                    let policies = policies.iter().map(|p| p.id()).collect();
                    out.push(if local.entity_id.is_writer() {
                        MatchAction::WriterIncompatible { local, policies }
                    } else {
                        MatchAction::ReaderIncompatible { local, policies }
                    });
                }
            }
        }
    }
}
