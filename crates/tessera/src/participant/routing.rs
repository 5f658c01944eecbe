//! The table of local endpoints with the routes from remote writers to local readers, and
//! the receive path that decodes a datagram and hands each submessage to its endpoint.

use super::ParticipantShared;
use crate::endpoint::{LocalReader, LocalWriter};
use crate::transport::Channel;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tessera_rtps::fasthash::FastHashMap;
use tessera_rtps::types::{EntityId, Guid, GuidPrefix};
use tessera_rtps::wire::{MessageReceiver, Submessage};

/// The local readers matched with one remote writer: an immutable snapshot, so that the receive
/// thread clones it (one reference count, no allocation) and runs the readers' handlers, and
/// with them their listeners, without holding the endpoints table's lock.
pub(crate) type ReaderList = Arc<[Arc<dyn LocalReader>]>;

/// The local endpoints, by entity id, and which local readers each remote writer feeds.
#[derive(Default)]
pub(crate) struct Endpoints {
    pub writers: FastHashMap<EntityId, Arc<dyn LocalWriter>>,
    pub readers: FastHashMap<EntityId, Arc<dyn LocalReader>>,
    /// Remote writer → the local readers matched with it.
    readers_of_remote_writer: FastHashMap<Guid, ReaderList>,
    /// Bumped (under the table's write lock) by every change of `readers_of_remote_writer`:
    /// a receive thread keeps the last list it looked up while this stays the same
    /// ([`RouteCache`]), and looks at it without the table's lock
    /// ([`ParticipantShared::routes_generation`]).
    pub(super) routes_generation: Arc<AtomicU64>,
}

/// The last route a receive thread looked up: a datagram of 16-byte samples carries hundreds
/// of DATA submessages from one writer, and each would otherwise hash the writer's GUID and
/// count a reference to its reader list.
#[derive(Default)]
pub(crate) struct RouteCache(Option<(Guid, u64, Option<ReaderList>)>);

impl RouteCache {
    /// Whether the cache holds `remote`'s route as of routes generation `generation`.
    fn is_fresh(&self, remote: &Guid, generation: u64) -> bool {
        matches!(&self.0, Some((g, gen, _)) if g == remote && *gen == generation)
    }

    /// The readers of the writer last routed through this cache.
    fn readers(&self) -> Option<&ReaderList> {
        self.0.as_ref().and_then(|(_, _, l)| l.as_ref())
    }
}

impl Endpoints {
    /// The readers `remote` feeds (a snapshot; see [`ReaderList`]).
    pub fn readers_of(&self, remote: &Guid) -> Option<ReaderList> {
        self.readers_of_remote_writer.get(remote).cloned()
    }

    /// Points `cache` at the readers `remote` feeds, looking them up only when it holds
    /// another writer's or a route changed since. Returns the snapshot it displaced: drop it
    /// after releasing the lock, like [`Endpoints::remove_reader_of`]'s.
    #[must_use]
    pub fn route_through(
        &self,
        remote: &Guid,
        cache: &mut RouteCache,
    ) -> Option<(Guid, u64, Option<ReaderList>)> {
        let generation = self.routes_generation.load(Ordering::Relaxed);
        if cache.is_fresh(remote, generation) {
            return None;
        }
        cache
            .0
            .replace((*remote, generation, self.readers_of(remote)))
    }

    /// Routes `remote`'s submessages to `r` too.
    pub fn add_reader_of(&mut self, remote: Guid, r: Arc<dyn LocalReader>) {
        let list = self.readers_of_remote_writer.entry(remote).or_default();
        if !list.iter().any(|x| Arc::ptr_eq(x, &r)) {
            *list = list.iter().cloned().chain(std::iter::once(r)).collect();
            self.routes_generation.fetch_add(1, Ordering::Release);
        }
    }

    /// Stops routing `remote`'s submessages to the reader `reader`. Returns the replaced list:
    /// drop it after releasing the lock, since it may hold the last reference to an endpoint
    /// whose listener owns entities (their deletion takes this lock).
    #[must_use]
    pub fn remove_reader_of(&mut self, remote: &Guid, reader: Guid) -> Option<ReaderList> {
        let list = self.readers_of_remote_writer.get_mut(remote)?;
        if !list.iter().any(|x| x.guid() == reader) {
            return None;
        }
        let rest: ReaderList = list
            .iter()
            .filter(|x| x.guid() != reader)
            .cloned()
            .collect();
        self.routes_generation.fetch_add(1, Ordering::Release);
        if rest.is_empty() {
            self.readers_of_remote_writer.remove(remote)
        } else {
            Some(std::mem::replace(list, rest))
        }
    }

    /// Stops routing anything to the reader `reader` (it is being deleted). Returns the
    /// replaced lists, to drop after releasing the lock.
    #[must_use]
    pub fn remove_reader_everywhere(&mut self, reader: Guid) -> Vec<ReaderList> {
        let remotes: Vec<Guid> = self
            .readers_of_remote_writer
            .iter()
            .filter(|(_, l)| l.iter().any(|x| x.guid() == reader))
            .map(|(g, _)| *g)
            .collect();
        remotes
            .iter()
            .filter_map(|g| self.remove_reader_of(g, reader))
            .collect()
    }
}

impl ParticipantShared {
    /// Decodes one datagram and routes its submessages. Runs on a receive thread.
    pub(super) fn handle_datagram(&self, buf: &[u8], channel: Channel) {
        self.counters
            .datagrams_received
            .fetch_add(1, Ordering::Relaxed);
        let rx = match MessageReceiver::new(buf) {
            Ok(rx) => rx,
            Err(e) => {
                self.counters
                    .malformed_messages
                    .fetch_add(1, Ordering::Relaxed);
                tracing::debug!(error = %e, len = buf.len(), "dropped malformed RTPS message");
                return;
            }
        };
        if rx.header().guid_prefix == self.guid_prefix
            && matches!(channel, Channel::SpdpMulticast | Channel::UserMulticast)
        {
            // Our own multicast, looped back. (Unicast from ourselves is local delivery.)
            return;
        }
        // The receive loop's reading from when it found the datagram, if it took one.
        let now = crate::transport::recv::take_arrival().unwrap_or_else(Instant::now);
        let scope = crate::subscription::DatagramScope::start(now);
        let mut routes = RouteCache::default();
        for item in rx {
            let rs = match item {
                Ok(rs) => rs,
                Err(e) => {
                    self.counters
                        .malformed_submessages
                        .fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(error = %e, "dropped malformed submessage and the rest of its message");
                    break;
                }
            };
            if rs.dest_prefix != GuidPrefix::UNKNOWN && rs.dest_prefix != self.guid_prefix {
                continue;
            }
            if !matches!(rs.submessage, Submessage::Data(_) | Submessage::DataFrag(_)) {
                scope.flush();
            }
            let (writer_side, entity, to) = match &rs.submessage {
                Submessage::Data(d) => (false, d.writer_id, d.reader_id),
                Submessage::DataFrag(d) => (false, d.writer_id, d.reader_id),
                Submessage::Heartbeat(h) => (false, h.writer_id, h.reader_id),
                Submessage::HeartbeatFrag(h) => (false, h.writer_id, h.reader_id),
                Submessage::Gap(g) => (false, g.writer_id, g.reader_id),
                Submessage::AckNack(a) => (true, a.writer_id, a.reader_id),
                Submessage::NackFrag(n) => (true, n.writer_id, n.reader_id),
                _ => continue,
            };
            if entity.is_builtin() {
                let events = self.discovery.lock().handle(self, entity, &rs, now);
                self.apply_discovery_events(events, now);
                continue;
            }
            if writer_side {
                let w = self.endpoints.read().writers.get(&entity).cloned();
                match w {
                    Some(w) => w.handle(&self.ctx, &rs, now),
                    None => {
                        self.counters
                            .unroutable_submessages
                            .fetch_add(1, Ordering::Relaxed);
                    }
                }
            } else {
                let remote = Guid::new(rs.source_prefix, entity);
                // The lock is released before any handler (and listener) runs: a listener may
                // create or delete entities, which takes it for writing.
                let generation = self.routes_generation.load(Ordering::Acquire);
                if !routes.is_fresh(&remote, generation) {
                    let displaced = self.endpoints.read().route_through(&remote, &mut routes);
                    drop(displaced);
                }
                match routes.readers() {
                    Some(readers) => {
                        // A submessage addressed to one reader is for it alone: a GAP of
                        // writer-side content filtering must not reach the reader beside it.
                        for r in readers
                            .iter()
                            .filter(|r| to == EntityId::UNKNOWN || r.guid().entity_id == to)
                        {
                            r.handle(&self.ctx, &rs, now);
                        }
                    }
                    None => {
                        self.counters
                            .unroutable_submessages
                            .fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        scope.finish();
    }
}
