//! Links between discovery servers: each server tells the other everything it knows, so that
//! clients of different servers discover each other (Fast DDS 2.9's server-to-server links).
//!
//! A link is a participant entry of kind SERVER, made for each configured server at start (so
//! this server announces itself there, reliably, until the other acknowledges) or when another
//! server announces itself here. A linked server is served like a super client: every
//! participant and endpoint this server knows, except what that server told it. What a linked
//! server relays (DATA(p), DATA(w)/(r) and their disposals for participants that are not the
//! server itself) is kept as *relayed* entries (`Client::via`): they are relayed on to this
//! server's clients by the topic filter, but never written to (they are not our clients).
//!
//! When a linked server's lease runs out, its relayed participants get a lease of their own
//! (they expire unless another link or they themselves announce them again), and a configured
//! link is made anew so that the server is found again when it comes back.

use std::sync::Arc;
use std::time::Instant;

use super::{
    decode_properties, participant_type, BuiltinEndpointSet, Client, DiscoveryServerEngine,
    ParticipantType, SpdpParticipantData, MAX_CLIENTS,
};
use crate::discovery::ds_common::server_prefix;
use crate::discovery::RemoteServer;
use crate::types::{EntityId, Guid, GuidPrefix, SequenceNumber};

impl DiscoveryServerEngine {
    /// Whether `p` is a linked server.
    pub(super) fn is_link(&self, p: GuidPrefix) -> bool {
        self.clients
            .get(&p)
            .is_some_and(|c| super::is_server(c.kind))
    }

    /// The linked servers (configured or linked from the other side) currently known.
    pub fn linked_servers(&self) -> Vec<GuidPrefix> {
        let mut v: Vec<GuidPrefix> = self
            .clients
            .iter()
            .filter(|(_, c)| super::is_server(c.kind))
            .map(|(p, _)| *p)
            .collect();
        v.sort();
        v
    }

    /// Participants learned through linked servers, with the server that told us.
    pub fn relayed_participants(&self) -> Vec<(GuidPrefix, GuidPrefix)> {
        let mut v: Vec<(GuidPrefix, GuidPrefix)> = self
            .clients
            .iter()
            .filter_map(|(p, c)| c.via.map(|s| (*p, s)))
            .collect();
        v.sort();
        v
    }

    /// Makes the entry of configured link `l` (its DATA(p) unknown until it answers).
    pub(super) fn add_link(&mut self, l: RemoteServer, now: Instant) {
        let p = server_prefix(l.id);
        if p == self.prefix || self.clients.contains_key(&p) {
            return;
        }
        if !self.links.iter().any(|x| x.id == l.id) {
            self.links.push(l.clone());
        }
        // A server has the SPDP and SEDP endpoints.
        let eps = BuiltinEndpointSet::TESSERA_DEFAULT;
        self.add_client(
            p,
            ParticipantType::Server,
            Arc::new(Vec::new()),
            (Guid::new(p, EntityId::SPDP_WRITER), 0),
            l.locators,
            eps,
            now,
        );
    }

    /// Pings the linked servers that have not acknowledged our DATA(p) yet (Fast DDS pings
    /// listed servers every 450 ms until they do).
    pub(super) fn ping_links(&mut self, now: Instant) {
        let me = self.prefix;
        let waiting: Vec<GuidPrefix> = self
            .clients
            .iter()
            .filter(|(_, c)| super::is_server(c.kind))
            .filter(|(_, c)| {
                c.known
                    .get(&me)
                    .is_some_and(|sn| !c.pdp.is_acked_by_all(*sn))
            })
            .map(|(p, _)| *p)
            .collect();
        for p in waiting {
            self.announce_to(p, now);
        }
    }

    /// A linked server's lease ran out (its entry is gone): its relayed participants now live
    /// on their own lease, and a configured link is made again.
    pub(super) fn link_lost(&mut self, server: GuidPrefix, now: Instant) {
        let lease = self.lease;
        for c in self.clients.values_mut() {
            if c.via == Some(server) {
                c.via = None;
                c.expires = now + lease;
            }
        }
        if let Some(l) = self
            .links
            .iter()
            .find(|l| server_prefix(l.id) == server)
            .cloned()
        {
            self.add_link(l, now);
        }
    }

    /// Linked server `server` relayed participant `data` (payload `raw`).
    pub(super) fn on_relayed_participant(
        &mut self,
        server: GuidPrefix,
        data: SpdpParticipantData,
        raw: &[u8],
        origin: (Guid, SequenceNumber),
        now: Instant,
    ) {
        let x = data.guid_prefix;
        if x == self.prefix {
            return; // Ourselves, told back by a third server.
        }
        let payload = Arc::new(raw.to_vec());
        if let Some(c) = self.clients.get_mut(&x) {
            // A direct client, or one another link told us of: keep that; only a change from
            // the same link is taken.
            if c.via == Some(server) && c.payload != payload {
                c.payload = payload;
                c.origin = origin;
                self.generation += 1;
                let holders: Vec<GuidPrefix> = self
                    .clients
                    .iter()
                    .filter(|(_, b)| b.known.contains_key(&x))
                    .map(|(k, _)| *k)
                    .collect();
                for b in holders {
                    self.write_participant(b, x, now);
                }
            }
            return;
        }
        if self.clients.len() >= MAX_CLIENTS {
            self.counters.over_limit += 1;
            return;
        }
        let kind = decode_properties(raw)
            .ok()
            .and_then(|p| participant_type(&p))
            .filter(|k| super::is_client(*k))
            .unwrap_or(ParticipantType::Client);
        let me = self.prefix;
        let w = |id| crate::writer::WriterCore::new(super::relay_writer_config(Guid::new(me, id)));
        self.clients.insert(
            x,
            Client {
                kind,
                via: Some(server),
                payload,
                origin,
                locators: self.selector.select(&data.metatraffic_unicast_locators),
                expires: now + self.lease,
                endpoints: Default::default(),
                pdp: w(EntityId::SPDP_WRITER),
                sedp_pub: w(EntityId::SEDP_PUBLICATIONS_WRITER),
                sedp_sub: w(EntityId::SEDP_SUBSCRIPTIONS_WRITER),
                known: Default::default(),
                told: Default::default(),
                pending: Default::default(),
                hold: Default::default(),
            },
        );
        // It has no endpoints yet: nobody needs it until it does.
        self.generation += 1;
    }

    /// Linked server `server` relayed that participant `x` left.
    pub(super) fn on_relayed_goodbye(
        &mut self,
        server: GuidPrefix,
        x: GuidPrefix,
        sn: SequenceNumber,
        now: Instant,
    ) {
        if self.clients.get(&x).is_some_and(|c| c.via == Some(server)) {
            self.remove_client(x, Some((Guid::new(x, EntityId::SPDP_WRITER), sn)), now);
        }
    }
}
