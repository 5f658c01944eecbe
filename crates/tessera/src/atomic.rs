//! ATOMIC consistency in the runtime: the participant's consensus groups (see `tessera-atomic`).
//!
//! One group per ATOMIC (domain, partition list, topic). The participant opens its member when it
//! creates its first ATOMIC endpoint there (the consensus thread and its TCP listener start with
//! the first group) and announces the member's address in SEDP (`PID_TESSERA_CONSISTENCY`).
//! Peers come from SEDP: every remote ATOMIC endpoint that matches one of ours names its
//! participant's member; members then gossip what they know over the consensus links, so two
//! participants whose endpoints never match each other (two writers) still learn of each other
//! through one that matched both.
//!
//! **Formation** (a maintenance thread per group, every 150 ms). The member with the lowest id
//! (GUID prefix) among those known bootstraps the group with all of them once it knows three, or
//! after [`FORMATION_WAIT`] with fewer (then it warns: a group of two cannot survive a crash) —
//! unless gossip said a group is already formed: then it waits to be added. The leader adds
//! (learner, then voter) a live member that is not yet a voter, and removes the id of a member
//! that is gone: its participant left or lost liveliness (all its ATOMIC endpoints of the group
//! unmatched, and it has not answered gossip since), or it stopped answering while a successor
//! (the same process restarted under a new id) joined; it keeps three voters at least
//! ([`tessera_atomic::ConsensusGroup::reconcile`]). This assumes discovery and gossip
//! converged within the wait: two members that bootstrap without knowing each other would form
//! two groups (a join protocol that refuses that is future work).
//!
//! **Deliveries.** A pump thread per group hands committed entries, in log order, to the
//! participant's ATOMIC readers of that group (as local deliveries: no RTPS involved), retrying a
//! reader whose history refuses one until it makes room, so no committed sample is skipped.
//! A member with no ATOMIC reader of the group (only writers) has nobody to deliver to: its pump
//! takes the committed entries in bulk every [`IDLE_DRAIN`] instead of being woken for each.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tessera_atomic::{
    Change, ConsensusGroup, ConsensusThread, Delivery, Entry, GroupSpec, MemberAddr, MemberId,
    ProposeError, Timing,
};
use tessera_rtps::reader::Delivered;
use tessera_rtps::types::{locator_kind, Guid, GuidPrefix, Locator, Timestamp};
use tessera_rtps::wire::PayloadKind;

use crate::endpoint::{LocalReader, RemoteEndpoint};
use crate::error::{Error, Result};
use crate::runtime::RuntimeContext;

/// How long the lowest member waits for a third before it forms a smaller group.
pub(crate) const FORMATION_WAIT: Duration = Duration::from_secs(2);

/// A committed ATOMIC write never returns sooner than commit; it gives up after this long (or
/// the writer's `max_blocking_time`, if longer).
pub(crate) const ATOMIC_WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// RTPS's TCPv4 locator kind: how the consensus address travels in the vendor parameter.
const LOCATOR_KIND_TCPV4: i32 = 4;

fn to_locator(a: SocketAddr) -> Locator {
    let mut l = match a.ip() {
        IpAddr::V4(v4) => Locator::udpv4(v4, a.port()),
        IpAddr::V6(v6) => Locator::udpv6(v6, a.port()),
    };
    if l.kind == locator_kind::UDPV4 {
        l.kind = LOCATOR_KIND_TCPV4;
    } else {
        l.kind = 8; // TCPv6
    }
    l
}

fn from_locator(l: &Locator) -> Option<SocketAddr> {
    let mut udp = *l;
    udp.kind = match l.kind {
        LOCATOR_KIND_TCPV4 => locator_kind::UDPV4,
        8 => locator_kind::UDPV6,
        _ => return None,
    };
    udp.to_socket_addr()
}

/// The group of an ATOMIC endpoint: domain, partitions (sorted), topic.
pub(crate) fn group_name(domain: u32, partitions: &[String], topic: &str) -> String {
    let mut p = partitions.to_vec();
    p.sort();
    format!("{domain}/{}/{topic}", p.join(","))
}

/// One group as this participant takes part in it.
pub(crate) struct Group {
    name: String,
    me: MemberId,
    /// Behind Tessera's trait: only [`AtomicService::join`] knows it is openraft.
    member: Arc<dyn ConsensusGroup>,
    /// Known members (this one included) and their consensus addresses, from SEDP.
    peers: Mutex<BTreeMap<MemberId, SocketAddr>>,
    /// Per remote member, its ATOMIC endpoints matched with ours in this group.
    endpoints: Mutex<BTreeMap<MemberId, BTreeSet<Guid>>>,
    /// Members whose every matched endpoint unmatched (left, or lease expired), and since
    /// when: the leader removes them; a later match, or an answer to gossip after that
    /// instant, brings one back.
    gone: Mutex<BTreeMap<MemberId, Instant>>,
    readers: Mutex<Vec<Weak<dyn LocalReader>>>,
    /// Whether the pump idles (no reader: it drops what is queued, every [`IDLE_DRAIN`]).
    /// Dropping happens under this lock, by the pump or by a reader being added, so a reader
    /// never misses an entry committed after it was added.
    consume: Mutex<bool>,
    stop: AtomicBool,
    created: Instant,
}

impl Group {
    /// Proposes entries as one log entry (all commit or none); returns the last one's position
    /// once committed.
    pub(crate) fn propose_batch(
        &self,
        entries: Vec<Entry>,
        timeout: Duration,
    ) -> std::result::Result<u64, ProposeError> {
        self.member.propose_batch(entries, timeout)
    }
}

/// What a failed proposal means to the writer's caller.
pub(crate) fn propose_error(e: ProposeError) -> Error {
    match e {
        ProposeError::NoLeader => Error::Timeout,
        ProposeError::Indeterminate => Error::Indeterminate,
        ProposeError::Duplicate(_) => Error::PreconditionNotMet("sequence number reused".into()),
        ProposeError::Closed => Error::AlreadyDeleted,
    }
}

impl Group {
    fn deliver(&self, ctx: &RuntimeContext, index: u64, e: &Entry) {
        let status_info = e.kind.status_info();
        let sample = Delivered {
            writer: Guid::from_bytes(e.writer),
            seq: e.sn,
            kind: if status_info == 0 {
                PayloadKind::Data
            } else {
                PayloadKind::Key
            },
            payload: std::borrow::Cow::Borrowed(&e.payload[..]),
            status_info,
            key_hash: (e.key_hash != [0; 16]).then_some(e.key_hash),
            source_timestamp: Some(Timestamp::from_nanos(e.timestamp_ns)),
            original: None,
            coherent_set: None,
            group: None,
        };
        let readers: Vec<_> = self
            .readers
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for r in readers {
            // A full history refuses: wait for room rather than skip a committed sample.
            loop {
                // Scoped to the delivery: the listeners `notify_local` calls may write.
                let o = {
                    let _committed = crate::subscription::CommittedDelivery::start();
                    r.deliver_local(&sample, None, None)
                };
                let refused = o.rejected > 0;
                r.notify_local(ctx, o);
                if !refused || self.stop.load(Ordering::Relaxed) || ctx.is_closed() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        tracing::trace!(group = %self.name, index, "atomic delivery");
    }

    /// Forms the group or grows it: one round of the maintenance thread.
    fn maintain(&self, gossip: bool) {
        let sedp: Vec<(MemberId, MemberAddr)> = self
            .peers
            .lock()
            .iter()
            .map(|(k, v)| (*k, MemberAddr::Tcp(*v)))
            .collect();
        self.member.introduce(&sedp);
        if gossip {
            // Members whose endpoints never matched each other (two writers) learn of each
            // other through one that matched both.
            self.member.gossip(Duration::from_millis(300));
        }
        let known = self.member.known();
        let voters = self.member.voters();
        if voters.is_empty() {
            let ids: Vec<MemberId> = known.iter().map(|k| k.0).collect();
            if !self.member.group_formed_elsewhere()
                && forms_now(self.me, &ids, self.created.elapsed())
            {
                if ids.len() < 3 {
                    tracing::warn!(
                        group = %self.name,
                        voters = ids.len(),
                        "ATOMIC group formed with {} voter(s): a group of {} cannot survive a crash",
                        ids.len(),
                        ids.len()
                    );
                }
                if let Err(e) = self.member.bootstrap(known, Duration::from_secs(2)) {
                    tracing::debug!(group = %self.name, "forming: {e}");
                }
            }
            return;
        }
        // The leader adds live newcomers (gossip reaches those its discovery has not seen)
        // and removes the ids of members that are gone; elsewhere this does nothing.
        // A member that answers gossip after discovery gave it up is running and reachable:
        // a partition or a pause outlasted its discovery, and its discovery data may not come
        // again (its side never lost ours). Left out, it would never be added back and would
        // keep asking for votes with an old configuration that still names it.
        let gone: BTreeSet<MemberId> = {
            let mut gone = self.gone.lock();
            gone.retain(|id, since| !self.member.heard_after(*id, *since));
            gone.keys().copied().collect()
        };
        match self.member.reconcile(&gone, Duration::from_secs(2)) {
            Ok(Some(Change::Added(id))) => {
                tracing::info!(group = %self.name, member = %id, "ATOMIC member added")
            }
            Ok(Some(Change::Removed(id))) => {
                tracing::info!(group = %self.name, member = %id, "ATOMIC member removed (gone)")
            }
            Ok(None) => {}
            Err(e) => tracing::debug!(group = %self.name, "membership: {e}"),
        }
    }

    fn maintenance(self: Arc<Self>) {
        let mut round = 0u32;
        while !self.stop.load(Ordering::Relaxed) {
            self.maintain(round % 3 == 0);
            round = round.wrapping_add(1);
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    /// Whether a live ATOMIC reader of this participant receives the group's deliveries.
    fn has_readers(&self) -> bool {
        self.readers.lock().iter().any(|r| r.strong_count() > 0)
    }

    /// Drops what is queued for delivery: nobody here reads it. Call holding `consume` while idle.
    fn discard_queued(&self) {
        let n = self.member.deliveries().try_iter().count();
        if n > 0 {
            tracing::trace!(group = %self.name, entries = n, "committed, no local reader");
        }
    }

    fn pump(self: Arc<Self>, ctx: Weak<RuntimeContext>) {
        // Mirrors `consume`, which only this thread changes: the lock is taken on changes.
        let mut idle = true;
        while !self.stop.load(Ordering::Relaxed) {
            let Some(ctx) = ctx.upgrade() else { return };
            if !self.has_readers() {
                // Only writers here: a wake-up per committed entry would be for nothing (in a
                // 3-member ping-pong these were ~6 of ~35 thread wake-ups per round trip).
                if !idle {
                    *self.consume.lock() = true;
                    idle = true;
                }
                drop(ctx);
                std::thread::sleep(IDLE_DRAIN);
                let mut consume = self.consume.lock();
                if self.has_readers() {
                    *consume = false;
                    idle = false;
                } else {
                    self.discard_queued();
                }
                continue;
            }
            if idle {
                // A reader added from here on leaves the queue alone. No lock is held while
                // delivering (a listener may create a reader of this group).
                *self.consume.lock() = false;
                idle = false;
            }
            match self
                .member
                .deliveries()
                .recv_timeout(Duration::from_millis(50))
            {
                Ok(Delivery::Entry { index, entry }) => self.deliver(&ctx, index, &entry),
                Ok(Delivery::Skipped { index }) => tracing::warn!(
                    group = %self.name,
                    index,
                    "ATOMIC member caught up from a snapshot: earlier samples are not delivered here"
                ),
                Err(tessera_atomic::mailbox::RecvTimeoutError::Timeout) => {}
                Err(tessera_atomic::mailbox::RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

/// How often the pump of a member without local readers takes the entries committed meanwhile.
const IDLE_DRAIN: Duration = Duration::from_millis(20);

/// Whether `me` bootstraps the group now: it is the lowest known member (`known` is sorted, `me`
/// among them) and it knows three, or it waited [`FORMATION_WAIT`].
fn forms_now(me: MemberId, known: &[MemberId], waited: Duration) -> bool {
    known.first() == Some(&me) && (known.len() >= 3 || waited >= FORMATION_WAIT)
}

struct GroupEntry {
    group: Arc<Group>,
    threads: Vec<JoinHandle<()>>,
}

#[derive(Default)]
struct Inner {
    thread: Option<ConsensusThread>,
    groups: HashMap<String, GroupEntry>,
    by_endpoint: HashMap<Guid, Arc<Group>>,
    closed: bool,
}

/// The participant's consensus groups.
pub(crate) struct AtomicService {
    me: MemberId,
    inner: Mutex<Inner>,
}

impl AtomicService {
    pub(crate) fn new(prefix: GuidPrefix) -> Self {
        AtomicService {
            me: MemberId(prefix.0),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Joins (opening it if needed) the group of a new ATOMIC endpoint; returns the group and
    /// the consensus address to announce.
    pub(crate) fn join(
        &self,
        ctx: &Arc<RuntimeContext>,
        endpoint: Guid,
        name: String,
    ) -> Result<(Arc<Group>, Locator)> {
        let mut inner = self.inner.lock();
        if inner.closed {
            return Err(Error::AlreadyDeleted);
        }
        if inner.thread.is_none() {
            let ip = bind_ip(ctx);
            let t =
                ConsensusThread::start(&self.me.to_string()[..8], Some(SocketAddr::new(ip, 0)))?;
            inner.thread = Some(t);
        }
        let thread = inner.thread.as_ref().expect("started above");
        let addr = thread
            .tcp_addr()
            .expect("the consensus thread listens on TCP");
        let group = match inner.groups.get(&name) {
            Some(g) => g.group.clone(),
            None => {
                let member = thread
                    .open(GroupSpec {
                        group: name.clone(),
                        me: self.me,
                        initial: None,
                        sim: None,
                        timing: Timing::default(),
                    })
                    .map_err(|e| Error::OutOfResources(format!("consensus group: {e}")))?;
                let group = Arc::new(Group {
                    name: name.clone(),
                    me: self.me,
                    member: Arc::new(member) as Arc<dyn ConsensusGroup>,
                    peers: Mutex::new(BTreeMap::from([(self.me, addr)])),
                    endpoints: Mutex::new(BTreeMap::new()),
                    gone: Mutex::new(BTreeMap::new()),
                    readers: Mutex::new(Vec::new()),
                    consume: Mutex::new(true),
                    stop: AtomicBool::new(false),
                    created: Instant::now(),
                });
                let (g, weak_ctx) = (group.clone(), Arc::downgrade(ctx));
                let pump = std::thread::Builder::new()
                    .name("tessera-atomic".into())
                    .spawn(move || g.pump(weak_ctx))
                    .map_err(Error::Io)?;
                let g = group.clone();
                let maintenance = std::thread::Builder::new()
                    .name("tessera-atomic-m".into())
                    .spawn(move || g.maintenance())
                    .map_err(Error::Io)?;
                inner.groups.insert(
                    name,
                    GroupEntry {
                        group: group.clone(),
                        threads: vec![pump, maintenance],
                    },
                );
                group
            }
        };
        inner.by_endpoint.insert(endpoint, group.clone());
        Ok((group, to_locator(addr)))
    }

    /// Registers a local ATOMIC reader for its group's deliveries.
    pub(crate) fn add_reader(&self, group: &Group, reader: Weak<dyn LocalReader>) {
        let idle = group.consume.lock();
        // An idle pump drops what is queued: it was committed before this reader existed.
        // From here on the pump delivers (it sees the reader before it takes anything more).
        if *idle {
            group.discard_queued();
        }
        group.readers.lock().push(reader);
    }

    /// An endpoint matched `local`. An ATOMIC one names its participant's member of `local`'s
    /// group; an EVENTUAL reader of an ATOMIC writer is not a member (the writer sends it
    /// committed samples over RTPS, see `publication/atomic.rs`).
    pub(crate) fn matched(&self, local: Guid, remote: &RemoteEndpoint) {
        let group = self.inner.lock().by_endpoint.get(&local).cloned();
        let Some(g) = group else { return };
        if let Some(addr) = remote.consensus.as_ref().and_then(from_locator) {
            let id = MemberId(remote.guid.prefix.0);
            g.peers.lock().insert(id, addr);
            g.endpoints
                .lock()
                .entry(id)
                .or_default()
                .insert(remote.guid);
            g.gone.lock().remove(&id);
        }
    }

    /// An endpoint unmatched `local` (deleted, or its participant left or lost liveliness).
    /// When it was the last ATOMIC endpoint of its participant matched in `local`'s group, that
    /// member is gone: the leader removes it from the voters.
    pub(crate) fn unmatched(&self, local: Guid, remote: Guid) {
        let group = self.inner.lock().by_endpoint.get(&local).cloned();
        let Some(g) = group else { return };
        let id = MemberId(remote.prefix.0);
        if id == self.me {
            return;
        }
        let mut eps = g.endpoints.lock();
        let Some(set) = eps.get_mut(&id) else { return };
        set.remove(&remote);
        if set.is_empty() {
            eps.remove(&id);
            g.peers.lock().remove(&id);
            g.gone.lock().insert(id, Instant::now());
            tracing::debug!(group = %g.name, member = %id, "ATOMIC member gone");
        }
    }

    /// Leaves every group at once (the participant is going away).
    pub(crate) fn close(&self) {
        let mut inner = self.inner.lock();
        inner.closed = true;
        let groups: Vec<GroupEntry> = inner.groups.drain().map(|(_, g)| g).collect();
        inner.by_endpoint.clear();
        let thread = inner.thread.take();
        drop(inner);
        for mut g in groups {
            g.group.stop.store(true, Ordering::Relaxed);
            for t in g.threads.drain(..) {
                let _ = t.join();
            }
        }
        drop(thread);
    }
}

/// The address to listen on for consensus: the participant's first UDPv4 unicast address, or
/// loopback when it has none (in-process transport only).
fn bind_ip(ctx: &RuntimeContext) -> IpAddr {
    ctx.transport
        .default_unicast()
        .iter()
        .find_map(|l| l.to_socket_addr_v4().map(|a| IpAddr::V4(*a.ip())))
        .filter(|ip| !ip.is_unspecified())
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consensus_addresses_travel_as_tcp_locators() {
        let a: SocketAddr = "10.1.2.3:4567".parse().unwrap();
        let l = to_locator(a);
        assert_eq!(l.kind, LOCATOR_KIND_TCPV4);
        assert_eq!(from_locator(&l), Some(a));
        assert_eq!(
            from_locator(&Locator::udpv4(Ipv4Addr::LOCALHOST, 7400)),
            None
        );
        assert_eq!(group_name(0, &["b".into(), "a".into()], "T"), "0/a,b/T");
    }

    #[test]
    fn the_lowest_member_forms_the_group_with_three_or_after_the_wait() {
        let m = |b: u8| MemberId([b; 12]);
        let short = Duration::from_millis(10);
        assert!(forms_now(MemberId([1; 12]), &[m(1), m(2), m(3)], short));
        assert!(!forms_now(
            MemberId([2; 12]),
            &[m(1), m(2), m(3)],
            FORMATION_WAIT
        ));
        assert!(!forms_now(MemberId([1; 12]), &[m(1), m(2)], short));
        assert!(forms_now(MemberId([1; 12]), &[m(1), m(2)], FORMATION_WAIT));
        assert!(forms_now(MemberId([1; 12]), &[m(1)], FORMATION_WAIT));
    }
}
