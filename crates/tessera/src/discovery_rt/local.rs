//! The participant's own endpoints: announcing and withdrawing them, matching them with each
//! other, and the liveliness the engine asserts for them.

use super::{DiscoveryRuntime, EndpointTopic, MatchAction};
use crate::participant::ParticipantShared;
use std::time::Instant;
use tessera_rtps::discovery::{
    DiscoveredReaderData, DiscoveredWriterData, DiscoveryEngine, EngineEvent, LocalMatcher,
};
use tessera_rtps::qos::{ReaderSideQos, TypeConsistencyEnforcement, WriterSideQos};
use tessera_rtps::types::Guid;

impl DiscoveryRuntime {
    /// `DomainParticipant::assert_liveliness`: the engine tells the peers.
    pub fn assert_manual_liveliness(&mut self, p: &ParticipantShared, now: Instant) {
        self.engine.assert_manual_liveliness(now);
        self.flush(p, now);
    }

    /// Keeps the engine's AUTOMATIC assertions at the shortest lease of the local writers.
    fn automatic_lease_changed(&mut self, now: Instant) {
        let min = self.automatic_leases.iter().map(|(_, l)| *l).min();
        self.engine.set_automatic_liveliness(min, now);
    }

    /// Registers a local writer: announces it and matches it with known readers.
    pub fn add_local_writer(
        &mut self,
        p: &ParticipantShared,
        guid: Guid,
        topic: EndpointTopic<'_>,
        qos: WriterSideQos,
        now: Instant,
    ) -> Vec<MatchAction> {
        let l = qos.liveliness;
        // Also a re-announcement (`set_qos`): the writer keeps one entry.
        self.automatic_leases.retain(|(g, _)| *g != guid);
        if l.kind == tessera_rtps::qos::LivelinessKind::Automatic
            && !tessera_rtps::qos::is_infinite(l.lease_duration)
        {
            self.automatic_leases.push((guid, l.lease_duration));
            self.automatic_lease_changed(now);
        }
        let mut data =
            DiscoveredWriterData::new(guid, topic.topic_name, topic.type_name).with_qos(qos);
        data.unicast_locators.clone_from(&self.default_unicast);
        data.type_information = self.types.get(topic.type_name).cloned();
        if let Some(t) = &data.type_information {
            self.local_types
                .insert(guid, (t.clone(), TypeConsistencyEnforcement::default()));
        }
        let local = data.clone();
        self.local_change(
            p,
            now,
            |m, ev| m.add_writer(local, ev),
            |e| e.announce_writer(data, now),
        )
    }

    /// Registers a local reader: announces it and matches it with known writers.
    pub fn add_local_reader(
        &mut self,
        p: &ParticipantShared,
        guid: Guid,
        topic: EndpointTopic<'_>,
        qos: ReaderSideQos,
        now: Instant,
    ) -> Vec<MatchAction> {
        let mut data =
            DiscoveredReaderData::new(guid, topic.topic_name, topic.type_name).with_qos(qos);
        data.unicast_locators.clone_from(&self.default_unicast);
        data.content_filter = topic.content_filter.cloned();
        data.loan_layout = topic.loan_layout;
        data.cdr_chunks = topic.cdr_chunks;
        data.type_information = self.types.get(topic.type_name).cloned();
        if let Some(t) = &data.type_information {
            self.local_types
                .insert(guid, (t.clone(), data.qos.type_consistency));
        }
        // As Cyclone's readers do: writers that share our group send each sample once to it.
        data.multicast_locators.clone_from(&self.reader_multicast);
        let local = data.clone();
        self.local_change(
            p,
            now,
            |m, ev| m.add_reader(local, ev),
            |e| e.announce_reader(data, now),
        )
    }

    /// Unannounces a deleted local endpoint and ends its local matches.
    pub fn remove_local_endpoint(
        &mut self,
        p: &ParticipantShared,
        guid: Guid,
        now: Instant,
    ) -> Vec<MatchAction> {
        self.local_types.remove(&guid);
        self.pending.retain(|(l, _), _| *l != guid);
        self.refused.retain(|(l, _)| *l != guid);
        let before = self.automatic_leases.len();
        self.automatic_leases.retain(|(g, _)| *g != guid);
        if self.automatic_leases.len() != before {
            self.automatic_lease_changed(now);
        }
        self.local_change(
            p,
            now,
            |m, ev| m.remove(guid, ev),
            |e| e.withdraw(guid, now),
        )
    }

    /// A local endpoint changed: the local matches first (they need no network), then the
    /// engine's announcement and whatever it decided at once.
    fn local_change(
        &mut self,
        p: &ParticipantShared,
        now: Instant,
        local: impl FnOnce(&mut LocalMatcher, &mut Vec<EngineEvent>),
        engine: impl FnOnce(&mut dyn DiscoveryEngine),
    ) -> Vec<MatchAction> {
        let mut out = Vec::new();
        if let Some(m) = &mut self.local {
            let mut events = Vec::new();
            local(m, &mut events);
            self.apply(events, &mut out);
        }
        engine(self.engine.as_mut());
        self.flush(p, now);
        self.drain_engine(&mut out);
        out
    }
}
